/* The real-NCCL test inside `make test`. Its program builds and links
 * wherever CUDA and NCCL headers exist (the Makefile's gpu-build), and the
 * run itself (tests/gpu/run.sh) happens only where a GPU is visible. Its
 * judge, check_json, is tested everywhere on a simulated two-rank job, so a
 * checker that passes everything or nothing is caught without a GPU. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static const char *build_dir(void) {
  const char *b = getenv("BUILD");
  return b && *b ? b : "build";
}

/* system()'s exit status, or -1 when the command did not exit normally. */
static int run_cmd(const char *cmd) {
  int st = system(cmd);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char frames[512];
static int frames_recorded;

/* A simulated 2-rank job (real plugin, real sockets) watched by the viewer
 * in JSON mode, like run.sh does with NCCL; the frames land in `frames`. */
static int record_simulated_frames(void) {
  const char *b = build_dir();
  snprintf(frames, sizeof frames, "%s/gpu/sim-frames.jsonl", b);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "D=$(mktemp -d /tmp/nccltop-gpucheck-XXXXXX) || exit 1; chmod 700 \"$D\" || exit 1; "
           "NCCLTOP_DIR=\"$D\" %s/nccltop sim --ranks 2 --duration 2 --linger 4 --quiet "
           "--interval-ms 100 --plugin %s/libnccl-profiler-nccltop.so & S=$!; "
           "%s/nccltop -b --json -n 10 -d 500 --dir \"$D\" > %s; R=$?; wait $S; rm -rf \"$D\"; "
           "exit $R",
           b, b, b, frames);
  return run_cmd(cmd);
}

static int judge(const char *nranks, const char *input) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s/gpu/check_json %s < %s > /dev/null", build_dir(), nranks, input);
  return run_cmd(cmd);
}

static void gpu_program_builds_where_cuda_exists(void) {
  char app[512];
  snprintf(app, sizeof app, "%s/gpu/nccl_app", build_dir());
  CHECK(access(app, X_OK) == 0);
}

static void checker_passes_a_two_rank_job_with_proxy_and_network_data(void) {
  CHECK_EQ_U64(record_simulated_frames(), 0);
  frames_recorded = 1;
  CHECK_EQ_U64(judge("2", frames), 0);
}

static void checker_fails_when_a_rank_is_missing(void) {
  CHECK(frames_recorded); /* the same frames that passed with 2 ranks */
  CHECK_EQ_U64(judge("3", frames), 1);
}

static void checker_fails_without_frames(void) {
  CHECK_EQ_U64(judge("2", "/dev/null"), 1);
}

static void real_nccl_run_shows_proxy_states_and_step_waits(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "sh tests/gpu/run.sh %s 20", build_dir());
  CHECK_EQ_U64(run_cmd(cmd), 0);
}

int main(void) {
  struct stat st;
  if (stat("/usr/local/cuda/include/nccl.h", &st) == 0)
    TEST_RUN(gpu_program_builds_where_cuda_exists);
  else
    TEST_SKIP(gpu_program_builds_where_cuda_exists, "no CUDA/NCCL headers");
  TEST_RUN(checker_passes_a_two_rank_job_with_proxy_and_network_data);
  TEST_RUN(checker_fails_when_a_rank_is_missing);
  TEST_RUN(checker_fails_without_frames);
  if (run_cmd("nvidia-smi -L 2>/dev/null | grep -q '^GPU'") == 0)
    TEST_RUN(real_nccl_run_shows_proxy_states_and_step_waits);
  else
    TEST_SKIP(real_nccl_run_shows_proxy_states_and_step_waits, "no GPU visible");
  return TEST_DONE();
}
