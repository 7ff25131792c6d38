/* Reads NCCL_GRAPH_DUMP_FILE (graph_dump.h) with expat, into fixed-size
 * tables: every count is checked against its limit before it is used, and
 * anything NCCL would not write is one error naming the line. */
#include "graph_dump.h"

#include <errno.h>
#include <expat.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dump_channel {
  int ngpus;
  int nnets; /* 0, or 2 once closed: in and out */
  int64_t net[2];
  int64_t gpu[NT_DUMP_MAX_GPUS];
};

struct nt_graph_dump {
  int ngraphs;
  nt_dump_graph graph[NT_DUMP_MAX_GRAPHS];
  int nlisted[NT_DUMP_MAX_GRAPHS]; /* <channel> elements read */
  struct dump_channel *chan;       /* [NT_DUMP_MAX_GRAPHS][NT_DUMP_MAX_CHANNELS] */
};

typedef struct {
  XML_Parser p;
  nt_graph_dump *d;
  int depth;
  bool root_seen, in_graph, in_channel;
  char err[200];
  bool failed;
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

static const char *attr(const XML_Char **attrs, const char *key) {
  for (int i = 0; attrs[i] && attrs[i + 1]; i += 2)
    if (!strcmp(attrs[i], key)) return attrs[i + 1];
  return NULL;
}

/* A whole decimal integer in [lo, hi]. */
static bool get_int64(ctx *c, const char *el, const XML_Char **attrs, const char *key, int64_t lo,
                      int64_t hi, int64_t *out) {
  const char *v = attr(attrs, key);
  if (!v) {
    fail(c, "<%s> has no %s", el, key);
    return false;
  }
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < lo || x > hi) {
    fail(c, "<%s %s=\"%.24s\">: not an integer in %lld..%lld", el, key, v, (long long)lo,
         (long long)hi);
    return false;
  }
  *out = x;
  return true;
}

static bool get_int(ctx *c, const char *el, const XML_Char **attrs, const char *key, int lo, int hi,
                    int *out) {
  int64_t x;
  if (!get_int64(c, el, attrs, key, lo, hi, &x)) return false;
  *out = (int)x;
  return true;
}

/* A finite number >= 0 (NCCL writes floats with %g). */
static bool get_num(ctx *c, const char *el, const XML_Char **attrs, const char *key, double *out) {
  const char *v = attr(attrs, key);
  if (!v) {
    fail(c, "<%s> has no %s", el, key);
    return false;
  }
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !isfinite(x) || x < 0 || x > 1e9) {
    fail(c, "<%s %s=\"%.24s\">: not a number >= 0", el, key, v);
    return false;
  }
  *out = x;
  return true;
}

/* A link type as NCCL names them: 1 to 7 capital letters or digits. */
static bool get_type(ctx *c, const XML_Char **attrs, const char *key, char out[8]) {
  const char *v = attr(attrs, key);
  size_t n = v ? strlen(v) : 0;
  bool ok = n >= 1 && n <= 7;
  for (size_t i = 0; ok && i < n; i++)
    ok = (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9');
  if (!ok) {
    fail(c, "<graph %s>: not a link type such as NVL or PIX", key);
    return false;
  }
  memcpy(out, v, n + 1);
  return true;
}

static struct dump_channel *chan_at(nt_graph_dump *d, int g, int ch) {
  return &d->chan[g * NT_DUMP_MAX_CHANNELS + ch];
}

static void start_graph(ctx *c, const XML_Char **attrs) {
  nt_graph_dump *d = c->d;
  if (d->ngraphs >= NT_DUMP_MAX_GRAPHS) return fail(c, "more than %d graphs", NT_DUMP_MAX_GRAPHS);
  nt_dump_graph *g = &d->graph[d->ngraphs];
  if (!get_int(c, "graph", attrs, "id", 0, 255, &g->id) ||
      !get_int(c, "graph", attrs, "pattern", 0, 255, &g->pattern) ||
      !get_int(c, "graph", attrs, "crossnic", 0, 2, &g->cross_nic) ||
      !get_int(c, "graph", attrs, "nchannels", 0, NT_DUMP_MAX_CHANNELS, &g->nchannels) ||
      !get_num(c, "graph", attrs, "speedintra", &g->bw_intra) ||
      !get_num(c, "graph", attrs, "speedinter", &g->bw_inter) ||
      !get_num(c, "graph", attrs, "latencyinter", &g->latency_inter) ||
      !get_type(c, attrs, "typeintra", g->type_intra) ||
      !get_type(c, attrs, "typeinter", g->type_inter) ||
      !get_int(c, "graph", attrs, "samechannels", 0, 1, &g->same_channels))
    return;
  for (int i = 0; i < d->ngraphs; i++)
    if (d->graph[i].id == g->id) return fail(c, "two graphs with id %d", g->id);
  d->nlisted[d->ngraphs] = 0;
  d->ngraphs++;
  c->in_graph = true;
}

static void start_channel(ctx *c) {
  nt_graph_dump *d = c->d;
  int g = d->ngraphs - 1;
  if (d->nlisted[g] >= d->graph[g].nchannels)
    return fail(c, "graph %d lists more channels than its nchannels %d", d->graph[g].id,
                d->graph[g].nchannels);
  struct dump_channel *ch = chan_at(d, g, d->nlisted[g]++);
  memset(ch, 0, sizeof *ch);
  ch->net[0] = ch->net[1] = -1;
  c->in_channel = true;
}

/* <net> comes first and last, <gpu> between (search.cc writes them so). */
static void start_dev(ctx *c, bool net, const XML_Char **attrs) {
  nt_graph_dump *d = c->d;
  struct dump_channel *ch = chan_at(d, d->ngraphs - 1, d->nlisted[d->ngraphs - 1] - 1);
  int64_t dev;
  if (!get_int64(c, net ? "net" : "gpu", attrs, "dev", 0, INT64_MAX, &dev)) return;
  if (net) {
    if (ch->nnets >= 2 || (ch->nnets == 1 && ch->ngpus == 0) || (ch->nnets == 0 && ch->ngpus > 0))
      return fail(c, "a <net> neither first nor last in its channel");
    ch->net[ch->nnets++] = dev;
    return;
  }
  if (ch->nnets == 2) return fail(c, "a <gpu> after the channel's last <net>");
  if (ch->ngpus >= NT_DUMP_MAX_GPUS)
    return fail(c, "more than %d GPUs in a channel", NT_DUMP_MAX_GPUS);
  ch->gpu[ch->ngpus++] = dev;
}

static void on_start(void *data, const XML_Char *name, const XML_Char **attrs) {
  ctx *c = data;
  if (c->failed) return;
  c->depth++;
  if (c->depth == 1) {
    if (strcmp(name, "graphs")) return fail(c, "the root is <%.32s>, not <graphs>", name);
    int version;
    if (!get_int(c, "graphs", attrs, "version", 0, 1 << 20, &version)) return;
    if (version != 1) return fail(c, "graph dump version %d (this reads version 1)", version);
    c->root_seen = true;
  } else if (c->depth == 2 && !strcmp(name, "graph")) {
    start_graph(c, attrs);
  } else if (c->depth == 3 && !strcmp(name, "channel")) {
    start_channel(c);
  } else if (c->depth == 4 && (!strcmp(name, "net") || !strcmp(name, "gpu"))) {
    start_dev(c, name[0] == 'n', attrs);
  } else {
    fail(c, "<%.32s> at depth %d: not in a graph dump", name, c->depth);
  }
}

static void on_end(void *data, const XML_Char *name) {
  ctx *c = data;
  (void)name;
  if (c->failed) return;
  if (c->depth == 3) {
    nt_graph_dump *d = c->d;
    const struct dump_channel *ch = chan_at(d, d->ngraphs - 1, d->nlisted[d->ngraphs - 1] - 1);
    if (ch->ngpus == 0) return fail(c, "a channel with no <gpu>");
    if (ch->nnets == 1) return fail(c, "a channel with one <net> (NCCL writes two or none)");
  } else if (c->depth == 2) {
    nt_graph_dump *d = c->d;
    int g = d->ngraphs - 1;
    if (d->nlisted[g] != d->graph[g].nchannels)
      return fail(c, "graph %d lists %d channels, its nchannels says %d", d->graph[g].id,
                  d->nlisted[g], d->graph[g].nchannels);
  }
  c->depth--;
}

static void on_text(void *data, const XML_Char *s, int len) {
  ctx *c = data;
  for (int i = 0; i < len && !c->failed; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
      fail(c, "text inside an element");
}

/* No DTD: no entity expansion, whatever the file says. */
static void on_doctype(void *data, const XML_Char *name, const XML_Char *sys, const XML_Char *pub,
                       int has_internal) {
  (void)name, (void)sys, (void)pub, (void)has_internal;
  fail(data, "a DOCTYPE (NCCL writes none)");
}

nt_graph_dump *nt_graph_dump_parse(const char *xml, size_t len, char *err, size_t errlen) {
  if (len > NT_DUMP_MAX_BYTES) {
    snprintf(err, errlen, "graph dump is %zu bytes, limit %u", len, NT_DUMP_MAX_BYTES);
    return NULL;
  }
  nt_graph_dump *d = calloc(1, sizeof *d);
  if (d) d->chan = calloc((size_t)NT_DUMP_MAX_GRAPHS * NT_DUMP_MAX_CHANNELS, sizeof *d->chan);
  ctx c = {.d = d};
  c.p = d && d->chan ? XML_ParserCreate("UTF-8") : NULL;
  if (!c.p) {
    snprintf(err, errlen, "graph dump: out of memory");
    nt_graph_dump_free(d);
    return NULL;
  }
  XML_SetUserData(c.p, &c);
  XML_SetElementHandler(c.p, on_start, on_end);
  XML_SetCharacterDataHandler(c.p, on_text);
  XML_SetStartDoctypeDeclHandler(c.p, on_doctype);
  bool ok = XML_Parse(c.p, xml, (int)len, XML_TRUE) == XML_STATUS_OK && !c.failed;
  if (ok && !c.root_seen) {
    fail(&c, "empty");
    ok = false;
  }
  if (!ok) {
    const char *why = c.failed ? c.err : XML_ErrorString(XML_GetErrorCode(c.p));
    snprintf(err, errlen, "graph dump line %lu: %s", (unsigned long)XML_GetCurrentLineNumber(c.p),
             why);
    nt_graph_dump_free(d);
    d = NULL;
  }
  XML_ParserFree(c.p);
  return d;
}

void nt_graph_dump_free(nt_graph_dump *d) {
  if (!d) return;
  free(d->chan);
  free(d);
}

int nt_graph_dump_ngraphs(const nt_graph_dump *d) {
  return d ? d->ngraphs : 0;
}

const nt_dump_graph *nt_graph_dump_graph(const nt_graph_dump *d, int g) {
  return d && g >= 0 && g < d->ngraphs ? &d->graph[g] : NULL;
}

int nt_graph_dump_channel(const nt_graph_dump *d, int g, int c, int64_t *gpus, int cap,
                          int64_t *net_in, int64_t *net_out) {
  if (!d || g < 0 || g >= d->ngraphs || c < 0 || c >= d->nlisted[g]) return -1;
  const struct dump_channel *ch = &d->chan[g * NT_DUMP_MAX_CHANNELS + c];
  for (int k = 0; k < ch->ngpus && k < cap; k++) gpus[k] = ch->gpu[k];
  if (net_in) *net_in = ch->nnets ? ch->net[0] : -1;
  if (net_out) *net_out = ch->nnets ? ch->net[1] : -1;
  return ch->ngpus;
}

const char *nt_dump_graph_name(const nt_dump_graph *g) {
  /* The id says which search it was (init.cc numbers them: ring 0, tree 1,
   * CollNet chain 2, NVLS 3, CollNet direct 4); the pattern says how. */
  switch (g->id) {
  case 0: return "ring";
  case 1: return "tree";
  case 2: return "collnet chain";
  case 3: return "nvls";
  case 4: return "collnet direct";
  default: return "?";
  }
}

void nt_dump_dev_text(int64_t dev, char *buf, size_t cap) {
  int64_t sys = dev >> 56, local = dev & ((INT64_C(1) << 56) - 1);
  if (sys)
    snprintf(buf, cap, "%lld:%lld", (long long)sys, (long long)local);
  else
    snprintf(buf, cap, "%lld", (long long)local);
}
