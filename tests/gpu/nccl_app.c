/* A small real NCCL job for the GPU test: one process per rank, meeting
 * through NCCL_COMM_ID (every rank computes the same id from it; rank 0
 * runs the bootstrap root), then loops of all-reduce (1 KiB .. 64 MiB),
 * all-gather and send/recv between neighbours.
 *
 * usage: nccl_app RANK NRANKS SECONDS      (device: $NCCL_APP_DEVICE, default 0)
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CUDA(call)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));                   \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define NCCL(call)                                                                                 \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, ncclGetErrorString(r_));                   \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int rank = argc > 1 ? atoi(argv[1]) : -1;
  if (argc != 4 || !getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "usage: NCCL_COMM_ID=host:port nccl_app RANK NRANKS SECONDS\n");
    return 2;
  }
  int nranks = atoi(argv[2]);
  double seconds = atof(argv[3]);
  const char *dev = getenv("NCCL_APP_DEVICE");
  CUDA(cudaSetDevice(dev ? atoi(dev) : 0));
  size_t max_bytes = 64u << 20;
  float *send, *recv;
  CUDA(cudaMalloc((void **)&send, max_bytes));
  CUDA(cudaMalloc((void **)&recv, max_bytes * (size_t)nranks));
  CUDA(cudaMemset(send, 0, max_bytes));
  cudaStream_t stream;
  CUDA(cudaStreamCreate(&stream));
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id)); /* from NCCL_COMM_ID: the same on every rank */
  ncclComm_t comm;
  NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  /* Phase tags, if the nccltop plugin is loaded (it exports nccltop_tag). */
  void (*tag)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "nccltop_tag");
  double end = now_s() + seconds;
  long iterations = 0;
  while (now_s() < end) {
    if (tag) tag("allreduce");
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 8)
      NCCL(ncclAllReduce(send, recv, bytes / sizeof(float), ncclFloat32, ncclSum, comm, stream));
    if (tag) tag("allgather");
    NCCL(ncclAllGather(send, recv, (4u << 20) / sizeof(float), ncclFloat32, comm, stream));
    if (tag) tag("sendrecv");
    NCCL(ncclGroupStart());
    NCCL(
        ncclSend(send, (1u << 20) / sizeof(float), ncclFloat32, (rank + 1) % nranks, comm, stream));
    NCCL(ncclRecv(recv, (1u << 20) / sizeof(float), ncclFloat32, (rank - 1 + nranks) % nranks, comm,
                  stream));
    NCCL(ncclGroupEnd());
    CUDA(cudaStreamSynchronize(stream));
    iterations++;
  }
  NCCL(ncclCommDestroy(comm));
  CUDA(cudaFree(send));
  CUDA(cudaFree(recv));
  printf("rank %d: %ld iterations in %.0f s\n", rank, iterations, seconds);
  return 0;
}
