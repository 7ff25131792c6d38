/* A small real NCCL job for the GPU test: one process per rank, then loops of
 * all-reduce (1 KiB .. 64 MiB), all-gather and send/recv between neighbours,
 * and at the end one round whose results are checked.
 *
 * usage: nccl_app RANK NRANKS ITERS       a fixed number of loops
 *        nccl_app RANK NRANKS SECONDSs    e.g. "25s": loops for about that long
 * The device is $NCCL_APP_DEVICE (default 0).
 *
 * Bootstrap: with NCCL_COMM_ID=host:port set, ncclGetUniqueId builds the id
 * from that address and a fixed magic instead of random bytes
 * (bootstrapGetUniqueId in NCCL's src/bootstrap.cc), and rank 0 starts the
 * bootstrap root inside ncclCommInitRank (src/init.cc), so independently
 * started processes meet without passing the id around.
 *
 * In the timed form rank 0 decides when to stop and broadcasts the decision
 * every loop: ranks that each read their own clock could disagree by one
 * loop, and the rank that stopped first would leave the other one hanging.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int app_rank = -1;

#define CUDA(call)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s\n", app_rank, #call, cudaGetErrorString(e_));               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define NCCL(call)                                                                                 \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s\n", app_rank, #call, ncclGetErrorString(r_));               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define MAX_BYTES    ((size_t)64 << 20) /* largest all-reduce */
#define GATHER_BYTES ((size_t)4 << 20)  /* all-gather contribution per rank */
#define P2P_BYTES    ((size_t)1 << 20)  /* send/recv message */
#define CHECK_COUNT  256                /* floats checked after the loops (1 KiB) */

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
  cudaStream_t stream;
  float *send, *recv;
  long colls, p2ps;
  double bytes;
} app;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v < lo || v > hi) return -1;
  *out = v;
  return (int)(end - s);
}

/* nccltop_tag from the nccltop plugin, if NCCL loaded it. NCCL dlopens the
 * plugin RTLD_LOCAL, so RTLD_DEFAULT finds the symbol only when the plugin is
 * also preloaded; otherwise ask for the already loaded library by name. */
typedef void (*tag_fn)(const char *);
static tag_fn find_tag(void) {
  tag_fn f = (tag_fn)dlsym(RTLD_DEFAULT, "nccltop_tag");
  const char *path = getenv("NCCL_PROFILER_PLUGIN");
  if (!f && path && *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib) {
      f = (tag_fn)dlsym(lib, "nccltop_tag");
      if (dlclose(lib) != 0) f = NULL; /* NOLOAD took a reference; NCCL holds its own */
    }
  }
  return f;
}

/* One loop: the all-reduce sizes, one all-gather, one send/recv pair. */
static int one_loop(app *a, tag_fn tag) {
  if (tag) tag("allreduce");
  for (size_t bytes = 1024; bytes <= MAX_BYTES; bytes *= 4) {
    NCCL(ncclAllReduce(a->send, a->recv, bytes / sizeof(float), ncclFloat32, ncclSum, a->comm,
                       a->stream));
    a->colls++, a->bytes += (double)bytes;
  }
  if (tag) tag("allgather");
  NCCL(ncclAllGather(a->send, a->recv, GATHER_BYTES / sizeof(float), ncclFloat32, a->comm,
                     a->stream));
  a->colls++, a->bytes += (double)GATHER_BYTES;
  if (tag) tag("sendrecv");
  int next = (a->rank + 1) % a->nranks, prev = (a->rank - 1 + a->nranks) % a->nranks;
  NCCL(ncclGroupStart());
  NCCL(ncclSend(a->send, P2P_BYTES / sizeof(float), ncclFloat32, next, a->comm, a->stream));
  NCCL(ncclRecv(a->recv, P2P_BYTES / sizeof(float), ncclFloat32, prev, a->comm, a->stream));
  NCCL(ncclGroupEnd());
  a->p2ps += 2, a->bytes += 2.0 * (double)P2P_BYTES;
  if (tag) tag(NULL);
  return 0;
}

/* Rank 0's "go on?" reaches every rank (1 = another loop). */
static int agree(app *a, int *flag_dev, int *go) {
  if (a->rank == 0)
    CUDA(cudaMemcpyAsync(flag_dev, go, sizeof *go, cudaMemcpyHostToDevice, a->stream));
  NCCL(ncclBroadcast(flag_dev, flag_dev, 1, ncclInt32, 0, a->comm, a->stream));
  CUDA(cudaMemcpyAsync(go, flag_dev, sizeof *go, cudaMemcpyDeviceToHost, a->stream));
  a->colls++;
  return 0;
}

static int expect(const app *a, const char *what, const float *got, float want) {
  for (int i = 0; i < CHECK_COUNT; i++)
    if (got[i] != want) {
      fprintf(stderr, "rank %d: %s: element %d is %g, expected %g\n", a->rank, what, i,
              (double)got[i], (double)want);
      return 1;
    }
  return 0;
}

/* The first CHECK_COUNT floats of every send buffer hold rank + 1, the rest 0:
 * all-reduce gives n(n+1)/2, all-gather block k starts with k + 1, and the
 * receive from the previous rank brings prev + 1. */
static int verify(app *a) {
  static float host[CHECK_COUNT];
  int n = a->nranks, prev = (a->rank - 1 + n) % n;
  NCCL(ncclAllReduce(a->send, a->recv, CHECK_COUNT, ncclFloat32, ncclSum, a->comm, a->stream));
  CUDA(cudaMemcpyAsync(host, a->recv, sizeof host, cudaMemcpyDeviceToHost, a->stream));
  CUDA(cudaStreamSynchronize(a->stream));
  if (expect(a, "all-reduce", host, (float)(n * (n + 1) / 2))) return 1;
  size_t block = GATHER_BYTES / sizeof(float);
  NCCL(ncclAllGather(a->send, a->recv, block, ncclFloat32, a->comm, a->stream));
  for (int k = 0; k < n; k++) {
    CUDA(cudaMemcpyAsync(host, a->recv + (size_t)k * block, sizeof host, cudaMemcpyDeviceToHost,
                         a->stream));
    CUDA(cudaStreamSynchronize(a->stream));
    if (expect(a, "all-gather", host, (float)(k + 1))) return 1;
  }
  NCCL(ncclGroupStart());
  NCCL(ncclSend(a->send, CHECK_COUNT, ncclFloat32, (a->rank + 1) % n, a->comm, a->stream));
  NCCL(ncclRecv(a->recv, CHECK_COUNT, ncclFloat32, prev, a->comm, a->stream));
  NCCL(ncclGroupEnd());
  CUDA(cudaMemcpyAsync(host, a->recv, sizeof host, cudaMemcpyDeviceToHost, a->stream));
  CUDA(cudaStreamSynchronize(a->stream));
  return expect(a, "send/recv", host, (float)(prev + 1));
}

static int run(app *a, long iters, double seconds) {
  static float init[CHECK_COUNT];
  for (int i = 0; i < CHECK_COUNT; i++) init[i] = (float)(a->rank + 1);
  CUDA(cudaMemset(a->send, 0, MAX_BYTES));
  CUDA(cudaMemcpy(a->send, init, sizeof init, cudaMemcpyHostToDevice));
  int *flag_dev;
  CUDA(cudaMalloc((void **)&flag_dev, sizeof(int)));
  tag_fn tag = find_tag();
  printf("rank %d: nccltop_tag %s\n", a->rank, tag ? "found: loops are tagged" : "not found");
  double t0 = now_s(), end = t0 + seconds;
  long loops = 0;
  for (;;) {
    if (iters >= 0 && loops >= iters) break;
    if (one_loop(a, tag)) return 1;
    loops++;
    int go = 1;
    if (iters < 0) {
      go = now_s() < end;
      if (agree(a, flag_dev, &go)) return 1;
    }
    CUDA(cudaStreamSynchronize(a->stream));
    if (!go) break;
  }
  double took = now_s() - t0;
  CUDA(cudaFree(flag_dev));
  if (verify(a)) return 1;
  printf("rank %d: %ld loops in %.1f s: %ld collectives, %ld send/recv, %.2f GB moved by the "
         "application; results verified\n",
         a->rank, loops, took, a->colls, a->p2ps, a->bytes / 1e9);
  return 0;
}

/* A whole decimal number in [lo, hi]. */
static int parse_whole(const char *s, long lo, long hi, long *out) {
  int n = parse_long(s, lo, hi, out);
  return n > 0 && s[n] == '\0' ? 0 : -1;
}

int main(int argc, char **argv) {
  long rank = -1, nranks = 0, iters = -1, secs = 0;
  int bad = argc != 4 || parse_whole(argv[1], 0, 1 << 20, &rank) ||
            parse_whole(argv[2], 1, 1 << 20, &nranks) || rank >= nranks;
  if (!bad && parse_whole(argv[3], 0, 100000000, &iters) != 0) {
    int n = parse_long(argv[3], 1, 86400, &secs);
    iters = -1; /* timed */
    bad = n <= 0 || strcmp(argv[3] + n, "s") != 0;
  }
  if (bad) {
    fprintf(stderr, "usage: nccl_app RANK NRANKS ITERS|SECONDSs   (e.g. nccl_app 0 2 25s)\n");
    return 2;
  }
  app_rank = (int)rank;
  if (!getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "nccl_app: set NCCL_COMM_ID=host:port (the same on every rank)\n");
    return 2;
  }
  app a = {.rank = (int)rank, .nranks = (int)nranks};
  const char *dev_env = getenv("NCCL_APP_DEVICE");
  long dev = 0;
  if (dev_env && *dev_env && parse_long(dev_env, 0, 1024, &dev) < 0) {
    fprintf(stderr, "nccl_app: NCCL_APP_DEVICE=%s is not a device number\n", dev_env);
    return 2;
  }
  int version = 0;
  NCCL(ncclGetVersion(&version));
  CUDA(cudaSetDevice((int)dev));
  struct cudaDeviceProp prop;
  CUDA(cudaGetDeviceProperties(&prop, (int)dev));
  printf("rank %d of %d: NCCL %d, device %ld (%s), %s\n", a.rank, a.nranks, version, dev, prop.name,
         iters >= 0 ? "fixed loop count" : "timed");
  size_t recv_bytes = GATHER_BYTES * (size_t)a.nranks;
  if (recv_bytes < MAX_BYTES) recv_bytes = MAX_BYTES;
  CUDA(cudaMalloc((void **)&a.send, MAX_BYTES));
  CUDA(cudaMalloc((void **)&a.recv, recv_bytes));
  CUDA(cudaStreamCreate(&a.stream));
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id));
  NCCL(ncclCommInitRank(&a.comm, a.nranks, id, a.rank));
  int rc = run(&a, iters, (double)secs);
  if (rc == 0)
    NCCL(ncclCommDestroy(a.comm));
  else
    ncclCommAbort(a.comm); /* never wait for a peer after a failure */
  CUDA(cudaStreamDestroy(a.stream));
  CUDA(cudaFree(a.send));
  CUDA(cudaFree(a.recv));
  return rc;
}
