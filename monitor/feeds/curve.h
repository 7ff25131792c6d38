/* ZeroMQ CURVE for nccltop's TCP links: the user's keypair (`nccltop
 * keygen`), the relay's authorized keys (a ZAP handler thread), and the
 * socket options of a CURVE server (the relay) and client (the viewer, or a
 * relay feeding from another).
 *
 * Files, in $XDG_CONFIG_HOME/nccltop (default ~/.config/nccltop), 0700:
 *   key              the secret key, 40 characters of Z85 and a newline, 0600
 *   key.pub          the public key, the same form, 0600
 *   authorized_keys  the viewers' public keys a relay accepts: one Z85 key
 *                    per line (its first word; the rest of the line is
 *                    ignored), other lines (comments starting with '#',
 *                    blank ones) ignored; '#' is also a Z85 character, so a
 *                    line whose first word is a key is a key. The relay's
 *                    own public key is always accepted. Read once, and
 *                    again when it changes (nt_authkeys_stale).
 * The common HPC case, one user with a shared home directory, needs nothing
 * but `nccltop keygen`: the relay's server key and every viewer's client key
 * are the same keypair, and a viewer's default --server-key is key.pub. */
#ifndef NCCLTOP_CURVE_H
#define NCCLTOP_CURVE_H

#include <stdbool.h>
#include <stddef.h>

#define NT_CURVE_SECRET_FILE "key"
#define NT_CURVE_PUBLIC_FILE "key.pub"
#define NT_CURVE_AUTH_FILE   "authorized_keys"
#define NT_CURVE_KEY_LEN     40 /* Z85 of 32 bytes */
/* authorized_keys larger than this is refused (a key is 41 bytes). */
#define NT_CURVE_AUTH_MAX_BYTES (4u << 20)

typedef struct {
  char pub[NT_CURVE_KEY_LEN + 1], sec[NT_CURVE_KEY_LEN + 1];
} nt_curve_keys;

/* libzmq was built with CURVE (libsodium). */
bool nt_curve_available(void);
/* $XDG_CONFIG_HOME/nccltop, or $HOME/.config/nccltop. -1 when neither is
 * set or the name does not fit. */
int nt_curve_config_dir(char *buf, size_t cap);
/* <config dir>/<name>. */
int nt_curve_config_path(const char *name, char *buf, size_t cap);
/* Loads the user's keypair (the public key is derived from the secret one
 * and must match key.pub when that exists). 0; 1 when there is no key file
 * (err says where it looked); -1 with the reason in err. */
int nt_curve_load(nt_curve_keys *k, char *err, size_t errlen);
/* A public key given as 40 Z85 characters, or the name of a file holding
 * one (the first non-comment line). 0, or -1 with the reason in err. */
int nt_curve_key_arg(const char *arg, char out[NT_CURVE_KEY_LEN + 1], char *err, size_t errlen);
/* True for a valid Z85 key (40 characters that decode). */
bool nt_curve_key_valid(const char *z85);
/* Socket options: a CURVE server (authenticated through ZAP, domain
 * "nccltop"), a CURVE client checking server_pub. Set before bind/connect;
 * ZeroMQ copies them into each connection made afterwards. */
int nt_curve_set_server(void *sock, const nt_curve_keys *k);
int nt_curve_set_client(void *sock, const nt_curve_keys *k, const char *server_pub);
/* Back to no security mechanism, for the connections made next. */
int nt_curve_set_none(void *sock);

/* True when a tcp:// endpoint's host is a loopback address (127.0.0.0/8,
 * ::1, localhost); false for anything else, wildcards included. */
bool nt_endpoint_is_loopback(const char *ep);

/* Key files are read bounded: regular files only (a FIFO or a device is
 * refused at once, never waited on), at most NT_CURVE_KEY_FILE_MAX bytes
 * for a key, NT_CURVE_AUTH_MAX_BYTES for the authorized keys. */
#define NT_CURVE_KEY_FILE_MAX (64u << 10)

/* The authorized keys, read into memory: whoever answers ZeroMQ's
 * authentication requests never touches the file. */
typedef struct {
  char (*keys)[NT_CURVE_KEY_LEN + 1]; /* sorted, for nt_authkeys_has */
  size_t n;
  bool exists; /* false: no such file, an empty list */
  /* What was read; when one of these changes the file is read again. */
  unsigned long long dev, ino, size;
  long long mtime_ns;
} nt_authkeys;
/* Reads path into ak (which it replaces only on success). 0 (a missing
 * file is an empty list); -1 with the reason in err: not a regular file,
 * larger than NT_CURVE_AUTH_MAX_BYTES, unreadable. */
int nt_authkeys_load(nt_authkeys *ak, const char *path, char *err, size_t errlen);
/* Whether path now names another file, or the same one changed, than what
 * ak holds (a stat, nothing opened). */
bool nt_authkeys_stale(const nt_authkeys *ak, const char *path);
bool nt_authkeys_has(const nt_authkeys *ak, const char *key);
void nt_authkeys_free(nt_authkeys *ak);

/* ZAP, ZeroMQ's authentication protocol, on inproc://zeromq.zap.01 of a
 * context: the socket answering it (bound before any handshake can ask),
 * one request read (the caller decides; several may be read before they
 * are answered), and the answer. */
typedef struct {
  char route[64]; /* which handshake asks (a ROUTER's routing id) */
  size_t route_len;
  char reqid[64];
  size_t reqid_len;
  char mechanism[16];             /* "NULL", "CURVE" */
  char addr[64];                  /* the peer's IP address */
  char key[NT_CURVE_KEY_LEN + 1]; /* CURVE: the client's public key; "" otherwise */
} nt_zap_request;
void *nt_zap_bind(void *zctx, char *err, size_t errlen);
/* Makes every handshake on sock ask ZAP, the NULL mechanism's too (a
 * domain set; nt_curve_set_server sets it). */
int nt_zap_require(void *sock);
/* Reads one request without waiting: 1 read, 0 none waiting, -1 a
 * malformed one (dropped). */
int nt_zap_recv(void *sock, nt_zap_request *rq);
/* 200 or 400; the user id of an accepted CURVE peer is its key. */
int nt_zap_reply(void *sock, const nt_zap_request *rq, bool ok);

/* `nccltop keygen [--force]`. */
int nt_keygen_main(int argc, char **argv);

#endif
