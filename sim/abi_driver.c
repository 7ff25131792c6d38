/* See abi_driver.h. Descriptors are built in the v5 layout and translated:
 * v4 shares v5's union layout for everything it has (it lacks the API
 * events and coll/p2p parentGroup); v3 puts name and commHash in front of
 * its coll and p2p members. */
#include "abi_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static nt_nccl_logger sim_logger_fn(void);

int sim_driver_open(sim_driver *d, const char *path, int abi, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
    return -1;
  }
  for (int v = 6; v >= 3; v--) {
    if (abi && v != abi) continue;
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
    void *t = dlsym(d->lib, sym);
    if (!t) continue;
    d->abi = v;
    if (v == 3)
      d->v3 = t;
    else if (v == 4)
      d->v4 = t;
    else
      d->v5 = t;
    return 0;
  }
  snprintf(err, errlen, "%s exports no ncclProfiler_v%s", path, abi ? "N asked for" : "3..6");
  return -1;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}
static nt_nccl_logger sim_logger_fn(void) {
  return logger;
}

int sim_driver_init(sim_driver *d, void **ctx, uint64_t hash, const char *name, int nnodes,
                    int nranks, int rank) {
  int rc;
  *ctx = NULL;
  if (d->abi == 3)
    rc = d->v3->init(ctx, &d->mask);
  else if (d->abi == 4)
    rc = d->v4->init(ctx, &d->mask, name, hash, nnodes, nranks, rank, sim_logger_fn());
  else
    rc = d->v5->init(ctx, hash, &d->mask, name, nnodes, nranks, rank, sim_logger_fn());
  d->enabled = rc == 0;
  return rc;
}

void sim_driver_finalize(sim_driver *d, void *ctx) {
  if (!d->enabled) return;
  if (d->abi == 3)
    d->v3->finalize(ctx);
  else if (d->abi == 4)
    d->v4->finalize(ctx);
  else
    d->v5->finalize(ctx);
}

/* NCCL's gating (src/plugin/profiler.cc): asking for a child event also
 * produces its ancestors. */
bool sim_driver_wants(sim_driver *d, int type) {
  if (!d->enabled) return false;
  int m = __atomic_load_n(&d->mask, __ATOMIC_RELAXED);
  int net = NT_EV_NET_PLUGIN;
  switch (type) {
  case NT_EV_GROUP_API: return d->abi >= 5 && (m & ~(NT_EV_PROXY_CTRL)) != 0;
  case NT_EV_COLL_API:
    return d->abi >= 5 && (m & (NT_EV_COLL_API | NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_PROXY_STEP |
                                NT_EV_KERNEL_CH | net));
  case NT_EV_GROUP:
    return m & (NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP |
                NT_EV_KERNEL_CH | net);
  case NT_EV_COLL:
    return m & (NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | net);
  case NT_EV_PROXY_OP: return m & (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_STEP: return m & (NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_CTRL: return m & NT_EV_PROXY_CTRL;
  case NT_EV_KERNEL_CH: return d->abi >= 3 && (m & NT_EV_KERNEL_CH);
  default: return false;
  }
}

void *sim_driver_start(sim_driver *d, void *ctx, nt_descr_v5 *e) {
  void *h = NULL;
  if (!d->enabled) return NULL;
  if (d->abi >= 5) {
    d->v5->startEvent(ctx, &h, e);
  } else if (d->abi == 4) {
    if (e->type >= NT_EV_GROUP_API) return NULL;
    nt_descr_v4 v4;
    memset(&v4, 0, sizeof v4);
    v4.type = (uint8_t)e->type;
    v4.parentObj = e->parentObj;
    v4.rank = e->rank;
    memcpy((char *)&v4 + 24, (char *)e + 24, sizeof v4 - 24); /* same union layout */
    d->v4->startEvent(ctx, &h, &v4);
  } else {
    if (e->type >= NT_EV_GROUP_API) return NULL;
    nt_descr_v3 v3;
    memset(&v3, 0, sizeof v3);
    v3.type = (uint8_t)e->type;
    v3.parentObj = e->parentObj;
    v3.rank = e->rank;
    if (e->type == NT_EV_COLL) {
      v3.coll.name = "sim";
      v3.coll.seqNumber = e->coll.seqNumber;
      v3.coll.func = e->coll.func;
      v3.coll.count = e->coll.count;
      v3.coll.datatype = e->coll.datatype;
      v3.coll.nMaxChannels = e->coll.nChannels;
      v3.coll.algo = e->coll.algo;
      v3.coll.proto = e->coll.proto;
    } else if (e->type == NT_EV_KERNEL_CH) {
      v3.kernelCh.channelId = e->kernelCh.channelId;
    } else {
      memcpy((char *)&v3 + 24, (char *)e + 24, 24); /* proxyOp / proxyStep */
    }
    d->v3->startEvent(ctx, &h, &v3);
  }
  return h;
}

void sim_driver_record(sim_driver *d, void *h, int state, const nt_state_args_v5 *args) {
  if (!d->enabled || !h) return;
  nt_state_args_v5 a;
  if (args)
    a = *args;
  else
    memset(&a, 0, sizeof a);
  if (d->abi >= 5) {
    d->v5->recordEventState(h, state, args ? &a : NULL);
  } else if (d->abi == 4) {
    if (state >= NT_ST_GROUP_START_API_STOP) return;
    d->v4->recordEventState(h, state, args ? &a : NULL);
  } else {
    /* NCCL 2.27+'s v3 shim forwards only step and control states, with the
     * arguments zeroed except the appended op count. */
    if (state > NT_ST_CTRL_APPEND_END) return;
    nt_state_args_v3 v3;
    memset(&v3, 0, sizeof v3);
    v3.proxyCtrl.appendedProxyOps =
        state == NT_ST_CTRL_APPEND_END ? a.proxyCtrl.appendedProxyOps : 0;
    d->v3->recordEventState(h, state, &v3);
  }
}

void sim_driver_stop(sim_driver *d, void *h) {
  if (!d->enabled || !h) return;
  if (d->abi == 3)
    d->v3->stopEvent(h);
  else if (d->abi == 4)
    d->v4->stopEvent(h);
  else
    d->v5->stopEvent(h);
}
