/* The task pool's pages, populated by the publisher (plugin/prefault.c), in
 * the real plugin: once a thread has opened an operation, its task pool is
 * resident by the time nccltop_flush returns, so the rest of it is not
 * faulted in on NCCL's thread; a thread that never enqueued holds none of
 * its pages. Residency is the kernel's own word (mincore). The pool is found
 * from the handles the plugin gives back: a thread's first operation is its
 * task pool's first slot. */
#include <pthread.h>
#include <sys/mman.h>

#include "testlib.h"
#include "plugin_harness.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HASH      0xfeedfacecafe0031ull
#define POOL_SPAN (512u * 1024u) /* inside the task pool, from its first slot */

static ph_t H;

/* Whether this kernel can populate ahead (Linux 5.14+). */
static bool kernel_populates(void) {
  long page = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  bool ok = madvise(p, (size_t)page, MADV_POPULATE_WRITE) == 0;
  munmap(p, (size_t)page);
  return ok;
}

/* How many of the pages [from, from + n) are resident (-1: mincore failed). */
static long resident_pages(const void *from, size_t n) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)from & ~(page - 1), b = ((uintptr_t)from + n + page - 1) & ~(page - 1);
  size_t pages = (b - a) / page;
  unsigned char *v = malloc(pages);
  if (!v || mincore((void *)a, b - a, v) != 0) {
    free(v);
    return -1;
  }
  long in = 0;
  for (size_t i = 0; i < pages; i++) in += v[i] & 1;
  free(v);
  return in;
}

/* Whether every page of [from, from + n) is resident. */
static bool all_resident(const void *from, size_t n) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)from & ~(page - 1), b = ((uintptr_t)from + n + page - 1) & ~(page - 1);
  return resident_pages(from, n) == (long)((b - a) / page);
}

static void case_a_used_pool_is_resident_after_a_flush(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  void *task = ph_coll(&H, ctx, 1);
  CHECK(task != NULL);
  H.flush();
  /* Without the publisher's help only the page the first task is on would
   * be, of the 128 checked. */
  CHECK(all_resident(task, POOL_SPAN));
  H.v5->stopEvent(task);
  ph_close(&H);
}
PH_CHILD(a_used_pool_is_resident_after_a_flush)

/* With transparent huge pages always on, one touch brings in 2 MiB, and
 * the pages of a pool nobody used may be resident for a neighbour's sake. */
static bool huge_pages_always(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128] = "";
  if (f) {
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
  }
  return strstr(line, "[always]") != NULL;
}

/* Where a thread's task pool is, from its burst handle: the same distance
 * as on a thread that has both. */
static ptrdiff_t ctrl_to_tasks;
static void *other_ctrl;

static void *other_thread(void *ctx) {
  void *h = NULL;
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  H.v5->startEvent(ctx, &h, &d);
  other_ctrl = h;
  if (h) H.v5->stopEvent(h);
  return NULL;
}

static void case_a_thread_that_never_enqueues_holds_no_task_pages(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  void *task = ph_coll(&H, ctx, 1);
  void *ctrl = NULL;
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  H.v5->startEvent(ctx, &ctrl, &d);
  CHECK(task != NULL && ctrl != NULL);
  ctrl_to_tasks = (char *)task - (char *)ctrl;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, other_thread, ctx) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(other_ctrl != NULL && other_ctrl != ctrl);
  H.flush();
  H.flush();
  CHECK(all_resident(task, POOL_SPAN));
  /* Past the slot's first page, none of the other thread's task pool. */
  long page = sysconf(_SC_PAGESIZE);
  if (!huge_pages_always())
    CHECK(resident_pages((char *)other_ctrl + ctrl_to_tasks + page, POOL_SPAN) == 0);
  H.v5->stopEvent(ctrl);
  H.v5->stopEvent(task);
  ph_close(&H);
}
PH_CHILD(a_thread_that_never_enqueues_holds_no_task_pages)

int main(void) {
  if (!kernel_populates()) {
    TEST_SKIP(a_used_pool_is_resident_after_a_flush, "the kernel has no MADV_POPULATE_WRITE");
    return TEST_DONE();
  }
  TEST_RUN(a_used_pool_is_resident_after_a_flush);
  TEST_RUN(a_thread_that_never_enqueues_holds_no_task_pages);
  return TEST_DONE();
}
