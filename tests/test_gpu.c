/* The real-NCCL test inside `make test`: the program builds and links
 * wherever CUDA and NCCL headers exist (the Makefile builds it), and runs
 * only where a GPU is visible; elsewhere it reports itself skipped. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

static const char *build_dir(void) {
  const char *b = getenv("BUILD");
  return b && *b ? b : "build";
}

static void gpu_program_builds_where_cuda_exists(void) {
  char app[512];
  snprintf(app, sizeof app, "%s/gpu/nccl_app", build_dir());
  CHECK(access(app, X_OK) == 0);
}

static void real_nccl_run_shows_proxy_states_and_step_waits(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "sh tests/gpu/run.sh %s 20", build_dir());
  CHECK(system(cmd) == 0);
}

int main(void) {
  struct stat st;
  if (stat("/usr/local/cuda/include/nccl.h", &st) == 0)
    TEST_RUN(gpu_program_builds_where_cuda_exists);
  else
    TEST_SKIP(gpu_program_builds_where_cuda_exists, "no CUDA/NCCL headers");
  if (system("nvidia-smi -L 2>/dev/null | grep -q '^GPU'") == 0)
    TEST_RUN(real_nccl_run_shows_proxy_states_and_step_waits);
  else
    TEST_SKIP(real_nccl_run_shows_proxy_states_and_step_waits, "no GPU visible");
  return TEST_DONE();
}
