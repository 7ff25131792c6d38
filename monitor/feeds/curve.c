/* CURVE keys, the ZAP handler and `nccltop keygen` (see curve.h). Keys are
 * Z85 text: what zmq_curve_keypair gives and what people can paste. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Reads a small file whole, without ever waiting on it: opened
 * non-blocking (a FIFO's open returns at once), then refused unless fstat
 * says it is a regular file; at most cap bytes. The text, NUL-terminated
 * (the caller frees it), its length and its stat; NULL with *missing set
 * when there is no such file, or with the reason in err. */
static char *read_regular(const char *path, size_t cap, size_t *len, struct stat *st, bool *missing,
                          char *err, size_t errlen) {
  *missing = false;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    *missing = errno == ENOENT;
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = NULL;
  if (fstat(fd, st) != 0) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
  } else if (!S_ISREG(st->st_mode)) {
    snprintf(err, errlen, "%s is not a regular file; refusing it", path);
  } else if ((unsigned long long)st->st_size > cap) {
    snprintf(err, errlen, "%s is larger than %zu bytes; refusing it", path, cap);
  } else if (!(buf = malloc(cap + 1))) {
    snprintf(err, errlen, "out of memory reading %s", path);
  } else {
    size_t n = 0;
    ssize_t r = 1;
    while (n <= cap && r > 0) { /* cap + 1 bytes: a file that grew is caught */
      r = read(fd, buf + n, cap + 1 - n);
      if (r < 0 && errno == EINTR)
        r = 1;
      else if (r > 0)
        n += (size_t)r;
    }
    if (r < 0 || n > cap) {
      if (r < 0)
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
      else
        snprintf(err, errlen, "%s is larger than %zu bytes; refusing it", path, cap);
      free(buf);
      buf = NULL;
    } else {
      buf[n] = '\0';
      *len = n;
    }
  }
  close(fd);
  return buf;
}

/* The first word of the next line of text (from *at), trimmed, in place;
 * *at moves past the line. NULL at the end. */
static char *next_first_word(char *text, size_t len, size_t *at) {
  if (*at >= len) return NULL;
  char *line = text + *at;
  char *nl = memchr(line, '\n', len - *at);
  size_t n = nl ? (size_t)(nl - line) : len - *at;
  *at += n + 1;
  line[n] = '\0';
  char *s = line + strspn(line, " \t");
  s[strcspn(s, " \t\r")] = '\0';
  return s;
}

/* The first line of a small key file that is not blank or a comment,
 * trimmed, into out (cap bytes). 0; 1 when the file does not exist; -1
 * otherwise. st, when not NULL, gets the file's stat. */
static int first_key_line(const char *path, char *out, size_t cap, struct stat *st_out, char *err,
                          size_t errlen) {
  size_t len = 0;
  bool missing;
  struct stat st;
  char *text = read_regular(path, NT_CURVE_KEY_FILE_MAX, &len, &st, &missing, err, errlen);
  if (!text) return missing ? 1 : -1;
  if (st_out) *st_out = st;
  int rc = -1;
  snprintf(err, errlen, "%s holds no key", path);
  size_t at = 0;
  char *s;
  while ((s = next_first_word(text, len, &at))) {
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
  free(text);
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
  int rc = first_key_line(path, k->sec, sizeof k->sec, &st, err, errlen);
  if (rc == 1) snprintf(err, errlen, "no key in %s (run 'nccltop keygen')", path);
  if (rc == 0 && (st.st_mode & 077)) {
    snprintf(err, errlen, "%s is readable by others (mode %03o); chmod 600 it", path,
             (unsigned)(st.st_mode & 0777));
    rc = -1;
  }
  if (rc != 0) {
    memset(k->sec, 0, sizeof k->sec);
    return rc;
  }
  if (zmq_curve_public(k->pub, k->sec) != 0) {
    snprintf(err, errlen, "%s: not a CURVE secret key", path);
    return -1;
  }
  char filed[NT_CURVE_KEY_LEN + 1];
  char e2[256];
  int prc = first_key_line(pubpath, filed, sizeof filed, NULL, e2, sizeof e2);
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
  int rc = first_key_line(arg, out, NT_CURVE_KEY_LEN + 1, NULL, err, errlen);
  if (rc == 1) snprintf(err, errlen, "server key '%.80s' is neither a Z85 key nor a file", arg);
  return rc == 0 ? 0 : -1;
}

int nt_zap_require(void *sock) {
  return zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN));
}

int nt_curve_set_server(void *sock, const nt_curve_keys *k) {
  int one = 1;
  return nt_zap_require(sock) || zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
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

/* ----- authorized keys ----- */

static int key_cmp(const void *a, const void *b) {
  return strcmp(a, b);
}

int nt_authkeys_load(nt_authkeys *ak, const char *path, char *err, size_t errlen) {
  size_t len = 0;
  bool missing;
  struct stat st;
  char *text = read_regular(path, NT_CURVE_AUTH_MAX_BYTES, &len, &st, &missing, err, errlen);
  if (!text && !missing) return -1;
  nt_authkeys fresh = {0};
  if (text) {
    /* At most one key per 41 bytes (40 and a newline), plus a last line. */
    fresh.keys = malloc((len / (NT_CURVE_KEY_LEN + 1) + 1) * sizeof *fresh.keys);
    if (!fresh.keys) {
      free(text);
      snprintf(err, errlen, "out of memory reading %s", path);
      return -1;
    }
    size_t at = 0;
    char *s;
    while ((s = next_first_word(text, len, &at)))
      if (nt_curve_key_valid(s)) memcpy(fresh.keys[fresh.n++], s, NT_CURVE_KEY_LEN + 1);
    free(text);
    qsort(fresh.keys, fresh.n, sizeof *fresh.keys, key_cmp);
    fresh.exists = true;
    fresh.dev = (unsigned long long)st.st_dev;
    fresh.ino = (unsigned long long)st.st_ino;
    fresh.size = (unsigned long long)st.st_size;
    fresh.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
  nt_authkeys_free(ak);
  *ak = fresh;
  return 0;
}

bool nt_authkeys_stale(const nt_authkeys *ak, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return ak->exists;
  return !ak->exists || (unsigned long long)st.st_dev != ak->dev ||
         (unsigned long long)st.st_ino != ak->ino || (unsigned long long)st.st_size != ak->size ||
         (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec != ak->mtime_ns;
}

bool nt_authkeys_has(const nt_authkeys *ak, const char *key) {
  return ak->n && bsearch(key, ak->keys, ak->n, sizeof *ak->keys, key_cmp) != NULL;
}

void nt_authkeys_free(nt_authkeys *ak) {
  free(ak->keys);
  memset(ak, 0, sizeof *ak);
}

/* ----- ZAP ----- */

/* A ROUTER, not the usual REP: requests can be read several at a time and
 * answered together (each carries the routing id of the handshake it comes
 * from, then the empty frame of a REQ envelope). */
void *nt_zap_bind(void *zctx, char *err, size_t errlen) {
  int zero = 0;
  void *sock = zmq_socket(zctx, ZMQ_ROUTER);
  if (!sock || zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero) ||
      zmq_bind(sock, ZAP_ENDPOINT) != 0) {
    snprintf(err, errlen, "cannot start the authentication handler: %s", zmq_strerror(zmq_errno()));
    if (sock) zmq_close(sock);
    return NULL;
  }
  return sock;
}

/* A request: routing id, empty frame, then version, request id, domain,
 * address, identity, mechanism, credentials. Only libzmq's own sessions can
 * reach an inproc endpoint of our context, but every frame is still read
 * bounded. */
int nt_zap_recv(void *sock, nt_zap_request *rq) {
  memset(rq, 0, sizeof *rq);
  char f[10][128];
  int sizes[10] = {0}, n = 0;
  for (bool more = true; more;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
      int e = zmq_errno();
      zmq_msg_close(&m);
      return n == 0 && e == EAGAIN ? 0 : -1;
    }
    if (n < 10) {
      size_t len = zmq_msg_size(&m) < sizeof f[n] - 1 ? zmq_msg_size(&m) : sizeof f[n] - 1;
      memcpy(f[n], zmq_msg_data(&m), len);
      f[n][len] = '\0';
      sizes[n++] = (int)zmq_msg_size(&m);
    }
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
  }
  if (n < 4 || sizes[0] > (int)sizeof rq->route || sizes[1] != 0) return -1;
  rq->route_len = (size_t)sizes[0];
  memcpy(rq->route, f[0], rq->route_len);
  rq->reqid_len = sizes[3] < (int)sizeof rq->reqid ? (size_t)sizes[3] : sizeof rq->reqid;
  memcpy(rq->reqid, f[3], rq->reqid_len);
  if (n >= 6) snprintf(rq->addr, sizeof rq->addr, "%.60s", f[5]);
  if (n >= 8) snprintf(rq->mechanism, sizeof rq->mechanism, "%.15s", f[7]);
  if (n >= 9 && !strcmp(rq->mechanism, "CURVE") && sizes[8] == 32)
    (void)zmq_z85_encode(rq->key, (const uint8_t *)f[8], 32);
  return 1;
}

static int send_frame(void *sock, const char *s, bool more) {
  return zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

int nt_zap_reply(void *sock, const nt_zap_request *rq, bool ok) {
  return zmq_send(sock, rq->route, rq->route_len, ZMQ_SNDMORE) < 0 || send_frame(sock, "", true) ||
                 send_frame(sock, "1.0", true) ||
                 zmq_send(sock, rq->reqid, rq->reqid_len, ZMQ_SNDMORE) < 0 ||
                 send_frame(sock, ok ? "200" : "400", true) ||
                 send_frame(sock, ok ? "OK" : "not authorized", true) ||
                 send_frame(sock, ok ? rq->key : "", true) || send_frame(sock, "", false)
             ? -1
             : 0;
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
