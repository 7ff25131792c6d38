/* The grammar's rules for symmetric-kernel collectives (--symmetric,
 * docs/NCCL-BEHAVIOUR.md O4). Included by sim_grammar.h after its trace
 * helpers and its BAD() reporter, which these use. */
#ifndef NCCLTOP_SIM_GRAMMAR_SYM_H
#define NCCLTOP_SIM_GRAMMAR_SYM_H

/* A Coll of a symmetric-kernel plan: v7 says so (isSymColl); through 2.31's
 * v6 shim only the empty proto shows it (no other Coll has one). */
static inline bool sym_coll(const ev_t *e) {
  return e && e->type == NT_EV_COLL && (e->sym == 1 || !e->proto[0]);
}
static inline bool sym_func(const char *func) {
  return !strcmp(func, "AllReduce") || !strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter");
}

/* --symmetric (docs/NCCL-BEHAVIOUR.md O4). Up to 2.30 a symmetric
 * collective has no Coll at all; 2.31 reports it (profiler.cc
 * ncclProfilerStartTaskEvents): isSymColl with a kernelVariant (v7) named
 * after its function, algo the variant after its first '_', proto "",
 * every AllReduce, AllGather and ReduceScatter of communicator 0 so; no
 * other Coll is symmetric. */
static inline const char *symmetric_problem(const nt_sim_config *c, const ev_t *e, int abi,
                                            int ver) {
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  bool want = c->symmetric && ver >= 227 && x && x->comm == 0 && sym_func(e->func);
  bool sym = sym_coll(e);
  if (want && ver < 231)
    return BAD("2.%d reported a symmetric %s as a Coll (line %d)", ver - 200, e->func, e->line);
  if (want != sym)
    return BAD("%s Coll line %d: symmetric %d, expected %d", e->func, e->line, sym, want);
  if (abi >= 7 && e->sym != (sym ? 1 : 0))
    return BAD("v7 Coll line %d: isSymColl %d", e->line, e->sym);
  if (!sym) {
    if (abi >= 7 && strcmp(e->variant, "-"))
      return BAD("Coll line %d: kernelVariant %s without isSymColl", e->line, e->variant);
    return NULL;
  }
  if (e->proto[0]) return BAD("symmetric Coll line %d: proto %s", e->line, e->proto);
  const char *variant = e->variant, *u = NULL;
  if (abi >= 7) {
    size_t n = strlen(e->func);
    u = strchr(variant, '_');
    if (!strcmp(variant, "-") || strncmp(variant, e->func, n) || variant[n] != '_')
      return BAD("%s Coll line %d: kernelVariant %s", e->func, e->line, variant);
    if (strcmp(e->algo, u + 1))
      return BAD("symmetric Coll line %d: algo %s, variant %s", e->line, e->algo, variant);
  }
  if (!e->algo[0]) return BAD("symmetric Coll line %d: no algo", e->line);
  /* One plan per Group here: its Colls share the kernel (variant and
   * algo), and only the first may advertise channels. */
  for (int j = (int)(e - tr.ev) - 1; j >= 0 && e->pgroup; j--) {
    const ev_t *q = &tr.ev[j];
    if (q->type != NT_EV_COLL || q->pid != e->pid || q->pgroup != e->pgroup) continue;
    if (e->nch > 0)
      return BAD("symmetric Coll line %d: nChannels %d but not its plan's first task", e->line,
                 e->nch);
    if (strcmp(q->algo, e->algo) || strcmp(q->variant, e->variant))
      return BAD("symmetric Coll line %d: variant %s in a plan of %s", e->line, e->variant,
                 q->variant);
    break;
  }
  return NULL;
}

/* A child of a symmetric Coll: never a ProxyOp (plan->hasProxyOps is
 * false); KernelCh only under the plan's first task, the one that
 * advertises nChannels, on channels 0 .. nChannels-1
 * (profilerPostPlanWorkSym). */
static inline const char *sym_child_problem(const ev_t *e, const ev_t *p) {
  if (!sym_coll(p)) return NULL;
  if (e->type == NT_EV_PROXY_OP)
    return BAD("ProxyOp line %d under a symmetric Coll (line %d)", e->line, p->line);
  if (e->type == NT_EV_KERNEL_CH && (p->nch <= 0 || e->ch < 0 || e->ch >= p->nch))
    return BAD("KernelCh line %d: channel %d under a symmetric Coll with nChannels %d", e->line,
               e->ch, p->nch);
  return NULL;
}

#endif
