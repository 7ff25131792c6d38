/* Reads NCCL's topology XML with expat into a bounded element tree. Every
 * limit breach is an error naming the file and line: this is input from
 * another program (or a person), never trusted. */
#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  XML_Parser p;
  xml_doc *doc;
  int cur, depth;
  char err[256];
  bool failed;
} ctx;

static void fail(ctx *c, const char *fmt, ...) {
  if (c->failed) return;
  c->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  XML_StopParser(c->p, XML_FALSE);
}

static void on_start(void *data, const XML_Char *name, const XML_Char **attrs) {
  ctx *c = data;
  if (c->failed) return;
  if (++c->depth > XML_MAX_DEPTH) return fail(c, "nesting deeper than %d", XML_MAX_DEPTH);
  if (c->doc->n >= XML_MAX_ELEMENTS) return fail(c, "more than %d elements", XML_MAX_ELEMENTS);
  if (strlen(name) >= XML_MAX_NAME) return fail(c, "element name too long");
  int i = c->doc->n++;
  xml_el *e = &c->doc->el[i];
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", name);
  e->parent = c->cur;
  e->first_child = e->last_child = e->next = -1;
  e->line = (int)XML_GetCurrentLineNumber(c->p);
  for (int a = 0; attrs[a]; a += 2) {
    if (e->nattr >= XML_MAX_ATTRS)
      return fail(c, "<%s> has more than %d attributes", name, XML_MAX_ATTRS);
    if (strlen(attrs[a]) >= XML_MAX_NAME || strlen(attrs[a + 1]) >= XML_MAX_VALUE)
      return fail(c, "<%s> attribute %.32s is too long", name, attrs[a]);
    size_t kl = strlen(attrs[a]) + 1, vl = strlen(attrs[a + 1]) + 1;
    xml_doc *d = c->doc;
    if (d->pool_len + kl + vl > d->pool_cap) return fail(c, "attributes too large");
    memcpy(d->pool + d->pool_len, attrs[a], kl);
    e->key[e->nattr] = (int)d->pool_len;
    d->pool_len += kl;
    memcpy(d->pool + d->pool_len, attrs[a + 1], vl);
    e->val[e->nattr] = (int)d->pool_len;
    d->pool_len += vl;
    e->nattr++;
  }
  if (c->cur >= 0) {
    xml_el *p = &c->doc->el[c->cur];
    if (p->last_child >= 0)
      c->doc->el[p->last_child].next = i;
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

/* Entity declarations would allow "billion laughs" expansion: refuse them. */
static void on_entity(void *data, const XML_Char *name, int pe, const XML_Char *v, int vlen,
                      const XML_Char *base, const XML_Char *sys, const XML_Char *pub,
                      const XML_Char *notation) {
  (void)pe, (void)v, (void)vlen, (void)base, (void)sys, (void)pub, (void)notation;
  fail(data, "entity declarations are not allowed (%.32s)", name);
}

int topo_xml_parse(const char *buf, size_t len, const char *name, xml_doc *doc, char *err,
                   size_t errlen) {
  if (len > XML_MAX_BYTES) {
    snprintf(err, errlen, "%s: %zu bytes; topology files are limited to %u", name, len,
             XML_MAX_BYTES);
    return -1;
  }
  doc->n = 0;
  doc->el = calloc(XML_MAX_ELEMENTS, sizeof *doc->el);
  doc->pool_cap = 2 * len + 4096;
  doc->pool_len = 0;
  doc->pool = malloc(doc->pool_cap);
  ctx c = {.doc = doc, .cur = -1};
  c.p = XML_ParserCreate(NULL);
  if (!doc->el || !doc->pool || !c.p) {
    snprintf(err, errlen, "%s: out of memory", name);
    topo_xml_free(doc);
    if (c.p) XML_ParserFree(c.p);
    return -1;
  }
  XML_SetUserData(c.p, &c);
  XML_SetElementHandler(c.p, on_start, on_end);
  XML_SetEntityDeclHandler(c.p, on_entity);
  int ok = XML_Parse(c.p, buf, (int)len, XML_TRUE) == XML_STATUS_OK && !c.failed;
  if (!ok) {
    const char *why = c.failed ? c.err : XML_ErrorString(XML_GetErrorCode(c.p));
    snprintf(err, errlen, "%s:%lu: %s", name, (unsigned long)XML_GetCurrentLineNumber(c.p), why);
  } else if (doc->n == 0 || strcmp(doc->el[0].name, "system") != 0) {
    snprintf(err, errlen, "%s:1: the root element must be <system>", name);
    ok = 0;
  }
  XML_ParserFree(c.p);
  if (!ok) topo_xml_free(doc);
  return ok ? 0 : -1;
}

void topo_xml_free(xml_doc *doc) {
  free(doc->el);
  free(doc->pool);
  doc->el = NULL;
  doc->pool = NULL;
}

const char *topo_xml_attr(const xml_doc *d, const xml_el *e, const char *key) {
  for (int i = 0; i < e->nattr; i++)
    if (!strcmp(d->pool + e->key[i], key)) return d->pool + e->val[i];
  return NULL;
}
