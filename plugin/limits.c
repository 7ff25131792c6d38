/* Room in the process before ZeroMQ takes any (publisher thread only).
 *
 * libzmq 4.3 has no way to fail softly when the process is out of
 * descriptors or threads while a context starts: epoll_create and
 * pthread_create failing there are assertions (epoll.cpp:65,
 * thread.cpp:269), i.e. SIGABRT for the training job. So before a context
 * starts, we make sure there is room for what it takes and for the job
 * after it, by taking that room for a moment ourselves and giving it back.
 * A limit reached by another thread in the microseconds between our check
 * and libzmq's own call can still fail it; nothing in libzmq's API closes
 * that window, and this narrows it from "whenever the job is near its
 * limit" to that. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "internal.h"

unsigned nt_fds_free_up_to(unsigned want) {
  int fds[64];
  unsigned n = 0;
  if (want > sizeof fds / sizeof fds[0]) want = sizeof fds / sizeof fds[0];
  int base = want ? open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
  if (base >= 0) fds[n++] = base;
  while (base >= 0 && n < want) {
    int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) break;
    fds[n++] = fd;
  }
  int e = errno;
  for (unsigned i = 0; i < n; i++) close(fds[i]);
  errno = e;
  return n;
}

struct probe {
  pthread_mutex_t lock;
  pthread_cond_t go;
  bool released;
};

/* Each probe thread holds its slot until every one has been created. */
static void *hold(void *arg) {
  struct probe *p = arg;
  pthread_mutex_lock(&p->lock);
  while (!p->released) pthread_cond_wait(&p->go, &p->lock);
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

unsigned nt_threads_free_up_to(unsigned want) {
  pthread_t t[16];
  struct probe p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
  pthread_attr_t attr;
  bool attr_ok = pthread_attr_init(&attr) == 0;
  /* Small stacks: a probe costs a slot, not memory. */
  if (attr_ok) (void)pthread_attr_setstacksize(&attr, 64 * 1024);
  if (want > sizeof t / sizeof t[0]) want = sizeof t / sizeof t[0];
  unsigned n = 0;
  while (n < want && pthread_create(&t[n], attr_ok ? &attr : NULL, hold, &p) == 0) n++;
  if (attr_ok) pthread_attr_destroy(&attr);
  pthread_mutex_lock(&p.lock);
  p.released = true;
  pthread_cond_broadcast(&p.go);
  pthread_mutex_unlock(&p.lock);
  for (unsigned i = 0; i < n; i++) pthread_join(t[i], NULL);
  pthread_cond_destroy(&p.go);
  pthread_mutex_destroy(&p.lock);
  return n;
}
