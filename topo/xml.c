/* Reads NCCL's topology XML with expat into a bounded element tree. Every
 * limit breach is an error naming the file and line: this is input from
 * another program (or a person), never trusted. What expat accepts but
 * NCCL's own, stricter parser refuses becomes a warning (the file may not
 * load in NCCL as it is). */
#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  XML_Parser p;
  nt_topo *t;
  xml_doc *doc;
  const char *buf;
  size_t len;
  int cur, depth;
  char err[200];
  bool failed;
  bool seen_tab, seen_newline, seen_entity, seen_text, seen_pi, seen_attrs, seen_subs;
} ctx;

static void fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ctx *c, const char *fmt, ...) {
  if (c->failed) return;
  c->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  XML_StopParser(c->p, XML_FALSE);
}

static int line_of(ctx *c) {
  return (int)XML_GetCurrentLineNumber(c->p);
}

/* Appends a NUL-terminated copy of s to the pool; -1 when full. */
static int pool_add(ctx *c, const char *s, size_t n) {
  xml_doc *d = c->doc;
  if (d->len + n + 1 > d->pcap) {
    size_t cap = d->pcap ? d->pcap : 4096;
    while (cap < d->len + n + 1) cap *= 2;
    if (cap > 4 * (size_t)XML_MAX_BYTES) return -1;
    char *p = realloc(d->pool, cap);
    if (!p) return -1;
    d->pool = p;
    d->pcap = cap;
  }
  int off = (int)d->len;
  memcpy(d->pool + d->len, s, n);
  d->pool[d->len + n] = '\0';
  d->len += n + 1;
  return off;
}

static bool grow(void **arr, int *cap, int need, int max, size_t size) {
  if (need <= *cap) return true;
  if (need > max) return false;
  int n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  if (n > max) n = max;
  void *p = realloc(*arr, (size_t)n * size);
  if (!p) return false;
  *arr = p;
  *cap = n;
  return true;
}

/* The raw start tag: NCCL's reader wants it on one line, with spaces only
 * and no entities. */
static void check_raw_tag(ctx *c) {
  long idx = (long)XML_GetCurrentByteIndex(c->p);
  int cnt = XML_GetCurrentByteCount(c->p);
  if (idx < 0 || cnt <= 0 || (size_t)idx + (size_t)cnt > c->len) return;
  for (const char *s = c->buf + idx; s < c->buf + idx + cnt; s++) {
    if (*s == '\t' && !c->seen_tab) {
      c->seen_tab = true;
      topo_warn(c->t, line_of(c), "tab inside a tag: NCCL's parser accepts only spaces");
    } else if ((*s == '\n' || *s == '\r') && !c->seen_newline) {
      c->seen_newline = true;
      topo_warn(c->t, line_of(c), "a tag spans several lines: NCCL's parser wants one line");
    } else if (*s == '&' && !c->seen_entity) {
      c->seen_entity = true;
      topo_warn(c->t, line_of(c), "entity in an attribute: NCCL does not decode entities");
    }
  }
}

static void on_start(void *data, const XML_Char *name, const XML_Char **attrs) {
  ctx *c = data;
  xml_doc *d = c->doc;
  if (c->failed) return;
  if (++c->depth > XML_MAX_DEPTH) return fail(c, "nesting deeper than %d levels", XML_MAX_DEPTH);
  if (!grow((void **)&d->el, &d->cap, d->n + 1, XML_MAX_ELEMENTS, sizeof *d->el))
    return fail(c, "more than %d elements", XML_MAX_ELEMENTS);
  size_t nl = strlen(name);
  if (nl >= XML_MAX_NAME) return fail(c, "element name longer than %d characters", XML_MAX_NAME);
  int i = d->n;
  xml_el *e = &d->el[i];
  memset(e, 0, sizeof *e);
  e->parent = c->cur;
  e->first_child = e->last_child = e->next = -1;
  e->line = line_of(c);
  e->attr0 = d->nat;
  if ((e->name = pool_add(c, name, nl)) < 0) return fail(c, "out of memory");
  int na = 0;
  for (; attrs[2 * na]; na++) {
    const char *k = attrs[2 * na], *v = attrs[2 * na + 1];
    size_t kl = strlen(k), vl = strlen(v);
    if (na >= XML_MAX_ATTRS)
      return fail(c, "<%.32s> has more than %d attributes", name, XML_MAX_ATTRS);
    if (kl >= XML_MAX_NAME) return fail(c, "<%.32s>: attribute name too long", name);
    if (vl > XML_MAX_VALUE)
      return fail(c, "<%.32s> attribute %.32s: value longer than %d characters", name, k,
                  XML_MAX_VALUE);
    if (!grow((void **)&d->at, &d->atcap, d->nat + 1, XML_MAX_ELEMENTS * XML_MAX_ATTRS,
              sizeof *d->at))
      return fail(c, "out of memory");
    int ko = pool_add(c, k, kl), vo = pool_add(c, v, vl);
    if (ko < 0 || vo < 0) return fail(c, "out of memory");
    d->at[d->nat++] = (xml_attr){ko, vo};
  }
  e->nattr = na;
  if (na > NCCL_XML_MAX_ATTRS && !c->seen_attrs) {
    c->seen_attrs = true;
    topo_warn(c->t, e->line, "<%.32s> has %d attributes: NCCL keeps the first %d", name, na,
              NCCL_XML_MAX_ATTRS);
  }
  check_raw_tag(c);
  d->n++;
  if (c->cur >= 0) {
    xml_el *p = &d->el[c->cur];
    if (p->last_child >= 0)
      d->el[p->last_child].next = i;
    else
      p->first_child = i;
    p->last_child = i;
  }
  c->cur = i;
}

static void on_end(void *data, const XML_Char *name) {
  ctx *c = data;
  (void)name;
  if (c->failed) return;
  c->depth--;
  c->cur = c->doc->el[c->cur].parent;
}

static void on_text(void *data, const XML_Char *s, int len) {
  ctx *c = data;
  for (int i = 0; i < len && !c->failed; i++) {
    if (s[i] == '\t' && !c->seen_tab) {
      c->seen_tab = true;
      topo_warn(c->t, line_of(c), "tab between elements: NCCL's parser accepts only spaces");
    } else if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t' && !c->seen_text) {
      c->seen_text = true;
      topo_warn(c->t, line_of(c), "text between elements: NCCL's parser refuses it");
    }
  }
}

static void on_decl(void *data, const XML_Char *version, const XML_Char *enc, int standalone) {
  ctx *c = data;
  (void)version, (void)enc, (void)standalone;
  topo_warn(c->t, line_of(c), "XML declaration: NCCL's parser fails on it (\"expected >\")");
}

static void on_pi(void *data, const XML_Char *target, const XML_Char *pi) {
  ctx *c = data;
  (void)target, (void)pi;
  if (!c->seen_pi) topo_warn(c->t, line_of(c), "processing instruction: NCCL's parser refuses it");
  c->seen_pi = true;
}

/* A DTD could declare entities ("billion laughs"): refuse any. */
static void on_doctype(void *data, const XML_Char *name, const XML_Char *sys, const XML_Char *pub,
                       int internal) {
  (void)name, (void)sys, (void)pub, (void)internal;
  fail(data, "DOCTYPE declarations are not allowed");
}

/* Counts children per element: NCCL's parser stops at 128 (2.28). */
static void check_children(ctx *c) {
  xml_doc *d = c->doc;
  for (int i = 0; i < d->n && !c->seen_subs; i++) {
    int n = 0;
    for (int k = d->el[i].first_child; k >= 0; k = d->el[k].next) n++;
    if (n > 128) {
      c->seen_subs = true;
      topo_warn(c->t, d->el[i].line, "<%.32s> has %d children: NCCL 2.28's parser stops at 128",
                d->pool + d->el[i].name, n);
    }
  }
  if (d->n > NCCL_XML_MAX_ELEMS)
    topo_warn(c->t, 0, "%d elements: NCCL's parser stops at %d (\"limited to %d nodes\")", d->n,
              NCCL_XML_MAX_ELEMS, NCCL_XML_MAX_ELEMS);
}

int topo_xml_parse(nt_topo *t, const char *buf, size_t len, xml_doc *doc, char *err,
                   size_t errlen) {
  memset(doc, 0, sizeof *doc);
  if (len > XML_MAX_BYTES) {
    snprintf(err, errlen, "%s: %zu bytes; topology files are limited to %u", t->name, len,
             XML_MAX_BYTES);
    return -1;
  }
  ctx c = {.t = t, .doc = doc, .buf = buf, .len = len, .cur = -1};
  c.p = XML_ParserCreate("UTF-8");
  if (!c.p) {
    snprintf(err, errlen, "%s: out of memory", t->name);
    return -1;
  }
  XML_SetUserData(c.p, &c);
  XML_SetElementHandler(c.p, on_start, on_end);
  XML_SetCharacterDataHandler(c.p, on_text);
  XML_SetXmlDeclHandler(c.p, on_decl);
  XML_SetProcessingInstructionHandler(c.p, on_pi);
  XML_SetStartDoctypeDeclHandler(c.p, on_doctype);
  int ok = XML_Parse(c.p, buf, (int)len, XML_TRUE) == XML_STATUS_OK && !c.failed;
  if (!ok) {
    const char *why = c.failed ? c.err : XML_ErrorString(XML_GetErrorCode(c.p));
    snprintf(err, errlen, "%s:%lu: %s", t->name, (unsigned long)XML_GetCurrentLineNumber(c.p),
             why ? why : "malformed XML");
  } else if (doc->n == 0 || strcmp(doc->pool + doc->el[0].name, "system") != 0) {
    snprintf(err, errlen, "%s:%d: the root element must be <system>", t->name,
             doc->n ? doc->el[0].line : 1);
    ok = 0;
  } else {
    check_children(&c);
  }
  XML_ParserFree(c.p);
  if (!ok) topo_xml_free(doc);
  return ok ? 0 : -1;
}

void topo_xml_free(xml_doc *doc) {
  free(doc->el);
  free(doc->at);
  free(doc->pool);
  memset(doc, 0, sizeof *doc);
}

/* The first attribute of that name, as NCCL's xmlGetAttrIndex finds it. */
const char *topo_xml_attr(const xml_doc *d, int el, const char *key) {
  const xml_el *e = &d->el[el];
  int n = e->nattr < NCCL_XML_MAX_ATTRS ? e->nattr : NCCL_XML_MAX_ATTRS;
  for (int i = 0; i < n; i++)
    if (!strcmp(d->pool + d->at[e->attr0 + i].key, key)) return d->pool + d->at[e->attr0 + i].val;
  return NULL;
}

const char *topo_xml_name(const xml_doc *d, int el) {
  return d->pool + d->el[el].name;
}

bool topo_xml_kept(const xml_doc *d, int parent, int child) {
  static const char *const rules[][2] = {
      {"system", "cpu"}, {"cpu", "pci"},     {"cpu", "nic"},    {"pci", "pci"}, {"pci", "gpu"},
      {"pci", "nic"},    {"pci", "pcilink"}, {"gpu", "nvlink"}, {"gpu", "c2c"}, {"nic", "net"}};
  const char *p = topo_xml_name(d, parent), *c = topo_xml_name(d, child);
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (!strcmp(p, rules[i][0]) && !strcmp(c, rules[i][1])) return true;
  return false;
}
