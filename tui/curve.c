/* CURVE keys, the ZAP handler and `nccltop keygen` (see curve.h). Keys are
 * Z85 text: what zmq_curve_keypair gives and what people can paste. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "curve.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN   "nccltop"

bool nt_curve_available(void) {
  return zmq_has("curve") != 0;
}

int nt_curve_config_dir(char *buf, size_t cap) {
  const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
  int n;
  if (x && x[0] == '/')
    n = snprintf(buf, cap, "%s/nccltop", x);
  else if (h && *h)
    n = snprintf(buf, cap, "%s/.config/nccltop", h);
  else
    return -1;
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int nt_curve_config_path(const char *name, char *buf, size_t cap) {
  char dir[512];
  if (nt_curve_config_dir(dir, sizeof dir) != 0) return -1;
  int n = snprintf(buf, cap, "%s/%s", dir, name);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

bool nt_curve_key_valid(const char *z) {
  uint8_t raw[32];
  return z && strlen(z) == NT_CURVE_KEY_LEN && zmq_z85_decode(raw, z) != NULL;
}

/* The first line of a small file that is not blank or a comment, trimmed,
 * into out (cap bytes). 0; 1 when the file does not exist; -1 otherwise. */
static int first_key_line(const char *path, char *out, size_t cap, char *err, size_t errlen) {
  FILE *f = fopen(path, "re");
  if (!f) {
    if (errno == ENOENT) return 1;
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  char line[256];
  int rc = -1;
  snprintf(err, errlen, "%s holds no key", path);
  for (int i = 0; i < 64 && fgets(line, sizeof line, f); i++) {
    char *s = line + strspn(line, " \t");
    s[strcspn(s, " \t\r\n")] = '\0';
    /* '#' is a Z85 character: a line is a comment only when its first word
     * is not a key. */
    if (!*s || (*s == '#' && !nt_curve_key_valid(s))) continue;
    if (strlen(s) >= cap || !nt_curve_key_valid(s)) {
      snprintf(err, errlen, "%s: not a Z85 CURVE key (40 characters from nccltop keygen)", path);
    } else {
      snprintf(out, cap, "%s", s);
      rc = 0;
    }
    break;
  }
  fclose(f);
  return rc;
}

int nt_curve_load(nt_curve_keys *k, char *err, size_t errlen) {
  char path[600], pubpath[600];
  memset(k, 0, sizeof *k);
  if (nt_curve_config_path(NT_CURVE_SECRET_FILE, path, sizeof path) != 0 ||
      nt_curve_config_path(NT_CURVE_PUBLIC_FILE, pubpath, sizeof pubpath) != 0) {
    snprintf(err, errlen, "no key: neither $XDG_CONFIG_HOME nor $HOME is set");
    return 1;
  }
  struct stat st;
  if (stat(path, &st) == 0 && (st.st_mode & 077)) {
    snprintf(err, errlen, "%s is readable by others (mode %03o); chmod 600 it", path,
             (unsigned)(st.st_mode & 0777));
    return -1;
  }
  int rc = first_key_line(path, k->sec, sizeof k->sec, err, errlen);
  if (rc == 1) snprintf(err, errlen, "no key in %s (run 'nccltop keygen')", path);
  if (rc != 0) return rc;
  if (zmq_curve_public(k->pub, k->sec) != 0) {
    snprintf(err, errlen, "%s: not a CURVE secret key", path);
    return -1;
  }
  char filed[NT_CURVE_KEY_LEN + 1];
  char e2[256];
  int prc = first_key_line(pubpath, filed, sizeof filed, e2, sizeof e2);
  if (prc == 0 && strcmp(filed, k->pub) != 0) {
    snprintf(err, errlen, "%s does not match %s (run 'nccltop keygen --force')", pubpath, path);
    return -1;
  }
  return 0;
}

int nt_curve_key_arg(const char *arg, char out[NT_CURVE_KEY_LEN + 1], char *err, size_t errlen) {
  if (nt_curve_key_valid(arg)) {
    memcpy(out, arg, NT_CURVE_KEY_LEN + 1);
    return 0;
  }
  int rc = first_key_line(arg, out, NT_CURVE_KEY_LEN + 1, err, errlen);
  if (rc == 1) snprintf(err, errlen, "server key '%.80s' is neither a Z85 key nor a file", arg);
  return rc == 0 ? 0 : -1;
}

int nt_curve_set_server(void *sock, const nt_curve_keys *k) {
  int one = 1;
  return zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) ||
         zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
         zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, k->sec, NT_CURVE_KEY_LEN);
}

int nt_curve_set_client(void *sock, const nt_curve_keys *k, const char *server_pub) {
  return zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server_pub, NT_CURVE_KEY_LEN) ||
         zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, k->pub, NT_CURVE_KEY_LEN) ||
         zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, k->sec, NT_CURVE_KEY_LEN);
}

int nt_curve_set_none(void *sock) {
  /* libzmq: an empty PLAIN user name selects the NULL mechanism. */
  return zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, NULL, 0);
}

bool nt_endpoint_is_loopback(const char *ep) {
  if (strncmp(ep, "tcp://", 6) != 0) return false;
  const char *h = ep + 6;
  const char *semi = strchr(h, ';'); /* tcp://src;dst: the destination counts */
  if (semi) h = semi + 1;
  if (!strncmp(h, "[::1]:", 6)) return true;
  if (!strncmp(h, "localhost:", 10)) return true;
  if (strncmp(h, "127.", 4) != 0) return false;
  int a, b, c, d, n = 0;
  return sscanf(h, "%d.%d.%d.%d:%n", &a, &b, &c, &d, &n) == 4 && n > 0 && a == 127 && b >= 0 &&
         b < 256 && c >= 0 && c < 256 && d >= 0 && d < 256;
}

/* ----- ZAP ----- */

struct nt_zap {
  void *zctx;
  pthread_t thread;
  atomic_bool stop;
  atomic_ulong refused;
  char auth_file[600];
  char own[NT_CURVE_KEY_LEN + 1];
  void *ready; /* the REP socket, bound before the thread starts */
  char last_key[NT_CURVE_KEY_LEN + 1];
  double last_log_s;
  unsigned long repeats;
};

/* Whether key (Z85) is own or a line of the file. */
static bool authorized(const nt_zap *z, const char *key) {
  if (!strcmp(key, z->own)) return true;
  if (!z->auth_file[0]) return false;
  FILE *f = fopen(z->auth_file, "re");
  if (!f) return false;
  char line[256];
  bool ok = false;
  size_t total = 0;
  while (!ok && fgets(line, sizeof line, f) && total < NT_CURVE_AUTH_MAX_BYTES) {
    total += strlen(line);
    char *s = line + strspn(line, " \t");
    s[strcspn(s, " \t\r\n")] = '\0'; /* the first word; '#' is a Z85 character */
    ok = *s && !strcmp(s, key);
  }
  fclose(f);
  return ok;
}

static int send_frame(void *sock, const char *s, bool more) {
  return zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

/* One request: version, request id, domain, address, identity, mechanism,
 * credentials; answered 200 or 400. */
static void zap_answer(nt_zap *z, void *sock) {
  char f[8][128];
  int sizes[8], n = 0;
  int more = 1;
  size_t ml = sizeof more;
  while (more) {
    if (n < 8) {
      int r = zmq_recv(sock, f[n], sizeof f[n] - 1, 0);
      if (r < 0) return;
      sizes[n] = r > (int)sizeof f[n] - 1 ? (int)sizeof f[n] - 1 : r;
      f[n][sizes[n]] = '\0';
      n++;
    } else {
      char junk[8];
      if (zmq_recv(sock, junk, sizeof junk, 0) < 0) return;
    }
    if (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ml) != 0) return;
  }
  bool ok = false;
  char key[NT_CURVE_KEY_LEN + 1] = "", addr[64] = "?";
  if (n >= 7 && !strcmp(f[5], "CURVE") && sizes[6] == 32) {
    if (zmq_z85_encode(key, (const uint8_t *)f[6], 32)) ok = authorized(z, key);
  }
  if (n >= 4) snprintf(addr, sizeof addr, "%.60s", f[3]);
  if (!ok) {
    atomic_fetch_add(&z->refused, 1);
    /* A refused viewer retries twice a second: the same key is logged again
     * only after ten seconds, with the count of the attempts between. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (strcmp(key, z->last_key) != 0 || now >= z->last_log_s + 10.0) {
      char again[64] = "";
      if (!strcmp(key, z->last_key) && z->repeats)
        snprintf(again, sizeof again, " (%lu attempts since the last line)", z->repeats);
      fprintf(stderr, "nccltop relay: refused viewer key %s from %s: not in %s%s\n",
              key[0] ? key : "(none: not CURVE)", addr,
              z->auth_file[0] ? z->auth_file : "the authorized keys", again);
      snprintf(z->last_key, sizeof z->last_key, "%s", key);
      z->last_log_s = now;
      z->repeats = 0;
    } else {
      z->repeats++;
    }
  }
  /* The REP socket must answer every request, whatever it held. */
  char reqid[128] = "";
  int idlen = n >= 2 ? sizes[1] : 0;
  if (idlen) memcpy(reqid, f[1], (size_t)idlen);
  if (send_frame(sock, "1.0", true) || zmq_send(sock, reqid, (size_t)idlen, ZMQ_SNDMORE) < 0 ||
      send_frame(sock, ok ? "200" : "400", true) ||
      send_frame(sock, ok ? "OK" : "key not authorized", true) || send_frame(sock, key, true) ||
      send_frame(sock, "", false))
    fprintf(stderr, "nccltop relay: cannot answer an authentication request: %s\n",
            zmq_strerror(zmq_errno()));
}

static void *zap_thread(void *arg) {
  nt_zap *z = arg;
  void *sock = z->ready;
  while (!atomic_load(&z->stop)) {
    zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
    int rc = zmq_poll(&it, 1, 200);
    if (rc < 0 && zmq_errno() != EINTR) break;
    if (rc > 0) zap_answer(z, sock);
  }
  zmq_close(sock);
  return NULL;
}

nt_zap *nt_zap_start(void *zctx, const char *auth_file, const char *own_pub, char *err,
                     size_t errlen) {
  nt_zap *z = calloc(1, sizeof *z);
  if (!z) return snprintf(err, errlen, "out of memory"), NULL;
  z->zctx = zctx;
  snprintf(z->auth_file, sizeof z->auth_file, "%s", auth_file ? auth_file : "");
  snprintf(z->own, sizeof z->own, "%s", own_pub);
  int zero = 0;
  z->ready = zmq_socket(zctx, ZMQ_REP);
  if (!z->ready || zmq_setsockopt(z->ready, ZMQ_LINGER, &zero, sizeof zero) ||
      zmq_bind(z->ready, ZAP_ENDPOINT) != 0) {
    snprintf(err, errlen, "cannot start the authentication handler: %s", zmq_strerror(zmq_errno()));
    if (z->ready) zmq_close(z->ready);
    free(z);
    return NULL;
  }
  if (pthread_create(&z->thread, NULL, zap_thread, z) != 0) {
    snprintf(err, errlen, "cannot start the authentication thread");
    zmq_close(z->ready);
    free(z);
    return NULL;
  }
  return z;
}

void nt_zap_stop(nt_zap *z) {
  if (!z) return;
  atomic_store(&z->stop, true);
  pthread_join(z->thread, NULL);
  free(z);
}

unsigned long nt_zap_refused(const nt_zap *z) {
  return atomic_load(&((nt_zap *)z)->refused);
}

/* ----- keygen ----- */

/* Makes dir (and a missing parent, 0700) and leaves it 0700. */
static int make_private_dir(const char *dir) {
  char parent[600];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    if (mkdir(parent, 0700) != 0 && errno != EEXIST) {
      fprintf(stderr, "nccltop keygen: cannot create %s: %s\n", parent, strerror(errno));
      return -1;
    }
  }
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "nccltop keygen: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "nccltop keygen: %s is not a directory\n", dir);
    return -1;
  }
  if (st.st_uid != getuid()) {
    fprintf(stderr, "nccltop keygen: %s belongs to another user\n", dir);
    return -1;
  }
  if ((st.st_mode & 0777) != 0700 && chmod(dir, 0700) != 0) {
    fprintf(stderr, "nccltop keygen: cannot make %s private: %s\n", dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Writes text into path, 0600, through a temporary file renamed into place
 * (O_EXCL: a file already at the temporary name is an error, not followed). */
static int write_key(const char *path, const char *text) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    fprintf(stderr, "nccltop keygen: cannot create %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  size_t len = strlen(text);
  bool ok = fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
  if (close(fd) != 0) ok = false;
  if (!ok || rename(tmp, path) != 0) {
    fprintf(stderr, "nccltop keygen: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

int nt_keygen_main(int argc, char **argv) {
  bool force = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--force")) {
      force = true;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: nccltop keygen [--force]\n"
             "Writes a CURVE keypair for relays and viewers into $XDG_CONFIG_HOME/nccltop\n"
             "(default ~/.config/nccltop): key (secret) and key.pub, mode 0600, the\n"
             "directory 0700. An existing key is kept unless --force is given.\n");
      return 0;
    } else {
      fprintf(stderr, "nccltop keygen: unknown option '%s'; try 'nccltop keygen --help'\n",
              argv[i]);
      return 2;
    }
  }
  if (!nt_curve_available()) {
    fprintf(stderr, "nccltop keygen: this libzmq was built without CURVE (libsodium)\n");
    return 1;
  }
  char dir[512], sec[600], pub[600];
  if (nt_curve_config_dir(dir, sizeof dir) != 0 ||
      nt_curve_config_path(NT_CURVE_SECRET_FILE, sec, sizeof sec) != 0 ||
      nt_curve_config_path(NT_CURVE_PUBLIC_FILE, pub, sizeof pub) != 0) {
    fprintf(stderr, "nccltop keygen: set $HOME or $XDG_CONFIG_HOME (an absolute path)\n");
    return 1;
  }
  if (make_private_dir(dir) != 0) return 1;
  struct stat st;
  if (!force && (lstat(sec, &st) == 0 || lstat(pub, &st) == 0)) {
    fprintf(stderr, "nccltop keygen: %s already exists; keeping it (--force replaces it)\n",
            lstat(sec, &st) == 0 ? sec : pub);
    return 1;
  }
  char zpub[NT_CURVE_KEY_LEN + 1], zsec[NT_CURVE_KEY_LEN + 1];
  if (zmq_curve_keypair(zpub, zsec) != 0) {
    fprintf(stderr, "nccltop keygen: cannot make a keypair: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  char line[NT_CURVE_KEY_LEN + 2];
  snprintf(line, sizeof line, "%s\n", zsec);
  if (write_key(sec, line) != 0) return 1;
  snprintf(line, sizeof line, "%s\n", zpub);
  if (write_key(pub, line) != 0) return 1;
  printf("nccltop keygen: wrote %s and %s\npublic key: %s\n", sec, pub, zpub);
  return 0;
}
