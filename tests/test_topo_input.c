/* topo/ against bad input: malformed, truncated and hostile XML gives an
 * error naming the file, the line and the problem, and never crashes;
 * everything is bounded. Also: what NCCL's stricter parser would refuse
 * becomes a warning, strings reach the model escaped, environment values
 * are read the way NCCL reads them, and `nccltop topo` exits as documented. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "lib/topo_fixture.h"
#include "../topo/topo.h"

/* The inline XML machines are string concatenations laid out like the XML
 * they spell; clang-format would scramble them. */
/* clang-format off */

#define HEAD "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" " \
  "familyid=\"6\" modelid=\"143\">"
#define TAIL "</cpu></system>"
#define GPUPCI(bus) "<pci busid=\"" bus "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" " \
  "link_width=\"16\">"
#define GPU0 GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci>"

static bool refused(const char *xml, size_t len, const char *want) {
  char err[512] = "";
  nt_topo *t = nt_topo_load_buffer(xml, len, "t.xml", err, sizeof err);
  if (t || !strstr(err, "t.xml") || !strstr(err, want)) {
    fprintf(stderr, "    wanted '%s', got '%s'%s\n", want, err, t ? " (loaded)" : "");
    nt_topo_free(t);
    return false;
  }
  return true;
}

static bool refused_s(const char *xml, const char *want) {
  return refused(xml, strlen(xml), want);
}

static bool has_warning(const nt_topo *t, const char *what) {
  for (int i = 0; i < nt_topo_nwarnings(t); i++)
    if (strstr(nt_topo_warning(t, i), what)) return true;
  return false;
}

static void malformed_xml_names_file_and_line(void) {
  CHECK(refused_s("<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\"", "t.xml:2:"));
  CHECK(refused_s("<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\">\n</system>", ":3:"));
  CHECK(refused_s("", "t.xml:1:"));
  CHECK(refused("\x00\x01\x02\xff<system", 9, "t.xml:1:"));
  CHECK(refused_s("<nope/>", "root element must be <system>"));
  CHECK(refused_s("<system version=\"2\"></system>", "version 1"));
  CHECK(refused_s("<system></system>", "needs attribute version"));
  CHECK(refused_s("<!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;\">]><system version=\"1\"/>",
                  "DOCTYPE"));
  CHECK(refused_s("<system version=\"1\" a=\"1\" a=\"2\"/>", "t.xml:1:"));
}

/* Attributes NCCL requires, and numbers that are not numbers. */
static void missing_and_mistyped_attributes(void) {
  static const struct {
    const char *xml, *want;
  } cases[] = {
      {"<system version=\"1\"><cpu arch=\"x86_64\"/></system>", "needs attribute numaid"},
      {"<system version=\"1\"><cpu numaid=\"zero\" arch=\"arm64\"/></system>", "numaid=\"zero\""},
      {"<system version=\"1\"><cpu numaid=\"0\"/></system>", "needs attribute arch"},
      {"<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\"/></system>", "vendor"},
      {"<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\"/></system>",
       "familyid"},
      {HEAD "<pci class=\"0x0604\"/>" TAIL, "needs attribute busid"},
      {HEAD "<pci busid=\"0000:01:00.0\"/>" TAIL, "needs attribute class"},
      {HEAD "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\" rank=\"0\" "
            "gdr=\"1\"/></pci>" TAIL, "link_width"},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"ninety\" rank=\"0\" gdr=\"1\"/></pci>" TAIL,
       "sm=\"ninety\" is not an integer"},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\"/></pci>" TAIL,
       "needs attribute gdr"},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"-3\" gdr=\"1\"/></pci>" TAIL,
       "rank=\"-3\""},
      {HEAD "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"\" link_width=\"-4\">"
            "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci>" TAIL, "link_width=\"-4\""},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"><nvlink "
            "target=\"x\" count=\"99999\" tclass=\"0x068000\"/></gpu></pci>" TAIL, "count"},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"><nvlink "
            "target=\"x\" count=\"2\"/></gpu></pci>" TAIL, "tclass"},
      {HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"><c2c bw=\"1e9\" "
            "count=\"2\"/></gpu></pci>" TAIL, "<c2c> bw"},
      {HEAD "<nic><net name=\"x\" dev=\"-1\"/></nic>" TAIL, "dev=\"-1\""},
      {HEAD "<nic><net name=\"x\" dev=\"0\" speed=\"fast\"/></nic>" TAIL, "speed=\"fast\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (!refused_s(cases[i].xml, cases[i].want)) fprintf(stderr, "    case %zu\n", i);
    CHECK(refused_s(cases[i].xml, cases[i].want));
  }
}

/* What NCCL would mix up or fail on is refused with the reason. */
static void inconsistent_machines_are_refused(void) {
  CHECK(refused_s(HEAD GPU0 GPU0 TAIL, "appears twice"));
  CHECK(refused_s(HEAD "<nic><net name=\"a\" dev=\"3\"/><net name=\"b\" dev=\"3\"/></nic>" TAIL,
                  "dev=\"3\" appears twice"));
  CHECK(refused_s(HEAD GPU0 GPUPCI("0000:02:00.0") "<gpu dev=\"1\" sm=\"90\" rank=\"0\" gdr=\"1\"/>"
                  "</pci>" TAIL, "rank 0 appears twice"));
  CHECK(refused_s(HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/>"
                  "<nic><net dev=\"0\"/></nic></pci>" TAIL, "both a <gpu> and a <nic>"));
  /* An NVLink that only one GPU lists: NCCL cannot find the way back. */
  CHECK(refused_s(HEAD GPUPCI("0000:01:00.0") "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">"
                  "<nvlink target=\"0000:02:00.0\" count=\"4\" tclass=\"0x030200\"/></gpu></pci>"
                  GPUPCI("0000:02:00.0") "<gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"/></pci>" TAIL,
                  "no link back"));
}

/* Sizes: file, nesting, elements, attributes, names, values, GPUs. */
static void absurd_sizes_are_bounded(void) {
  size_t cap = (9u << 20) + 64;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  memset(buf, ' ', cap);
  memcpy(buf, "<system version=\"1\">", 20);
  bool ok = refused(buf, 9u << 20, "limited to");
  char *p = buf + sprintf(buf, "<system version=\"1\">");
  for (int i = 0; i < 40; i++) p += sprintf(p, "<cpu numaid=\"0\" arch=\"arm64\">");
  ok = ok && refused_s(buf, "nesting deeper");
  p = buf + sprintf(buf, "<system version=\"1\">");
  for (int i = 0; i < 5000; i++) p += sprintf(p, "<x/>");
  sprintf(p, "</system>");
  ok = ok && refused_s(buf, "more than 4096 elements");
  p = buf + sprintf(buf, "<system version=\"1\" ");
  for (int i = 0; i < 40; i++) p += sprintf(p, "a%d=\"1\" ", i);
  sprintf(p, "/>");
  ok = ok && refused_s(buf, "more than 32 attributes");
  p = buf + sprintf(buf, "<system version=\"1\" name=\"");
  memset(p, 'v', 300);
  sprintf(p + 300, "\"/>");
  ok = ok && refused_s(buf, "longer than 255");
  p = buf + sprintf(buf, "<system version=\"1\"><");
  memset(p, 'e', 100);
  sprintf(p + 100, "/></system>");
  ok = ok && refused_s(buf, "element name longer");
  p = buf + sprintf(buf, HEAD);
  for (int i = 0; i < 65; i++)
    p += sprintf(p, GPUPCI("0000:%02x:00.0") "<gpu dev=\"%d\" sm=\"90\" rank=\"%d\" gdr=\"1\"/></pci>",
                 i + 1, i, i);
  sprintf(p, TAIL);
  ok = ok && refused_s(buf, "more than 64 GPUs");
  free(buf);
  CHECK(ok);
}

/* The largest machine we accept (64 GPUs on NVSwitch, 128 NICs, all under
 * one switch) computes, in both versions, without running out of anything. */
static void largest_machine_computes(void) {
  size_t cap = 1 << 20;
  char *buf = malloc(cap), err[512];
  CHECK(buf != NULL);
  char *p = buf + sprintf(buf, HEAD "<pci busid=\"0000:00:01.0\" class=\"0x060400\" "
                               "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">");
  for (int i = 0; i < 64; i++)
    p += sprintf(p, GPUPCI("0000:%02x:00.0") "<gpu dev=\"%d\" sm=\"90\" rank=\"%d\" gdr=\"1\">"
                 "<nvlink target=\"0000:ff:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>",
                 i + 1, i, i);
  for (int i = 0; i < 128; i++)
    p += sprintf(p, "<pci busid=\"0001:%02x:00.0\" class=\"0x020000\" link_speed=\"16.0 GT/s PCIe\" "
                 "link_width=\"16\"><nic><net name=\"n%d\" dev=\"%d\" gdr=\"1\"/></nic></pci>",
                 i, i, i);
  sprintf(p, "</pci>" TAIL);
  nt_topo *t = nt_topo_load_buffer(buf, strlen(buf), "big.xml", err, sizeof err);
  free(buf);
  if (!t) fprintf(stderr, "    %s\n", err);
  CHECK(t != NULL && nt_topo_ngpus(t) == 64 && nt_topo_nnets(t) == 128);
  nt_topo_env e;
  nt_topo_env_defaults(&e);
  e.version = NT_NCCL_230;
  CHECK(nt_topo_compute(t, &e, err, sizeof err) == 0);
  nt_topo_pair pr;
  CHECK(nt_topo_pair_at(t, 0, 191, &pr) && pr.type == NT_PATH_PIX);
  nt_topo_free(t);
}

/* Every prefix of a real topology, and bytes flipped at random (fixed
 * seed): each load ends in a topology or a named error, never a crash. */
static void truncated_and_corrupted_files_never_crash(void) {
  const char *path = "examples/topologies/nvswitch-8gpu-8nic.xml";
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  static char orig[1 << 16], buf[1 << 16];
  size_t n = fread(orig, 1, sizeof orig, f);
  fclose(f);
  CHECK(n > 1000);
  char err[512];
  int loaded = 0, errors = 0;
  for (size_t cut = 0; cut < n; cut += 13) {
    nt_topo *t = nt_topo_load_buffer(orig, cut, "cut.xml", err, sizeof err);
    if (t) loaded++, nt_topo_free(t);
    else errors += strstr(err, "cut.xml:") != NULL;
  }
  unsigned seed = 12345;
  static const char junk[] = "<>\"=/ \t\n&x0-9";
  for (int round = 0; round < 400; round++) {
    memcpy(buf, orig, n);
    for (int k = 0; k < 4; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % n;
      seed = seed * 1103515245u + 12345u;
      buf[at] = junk[(seed >> 8) % (sizeof junk - 1)];
    }
    nt_topo *t = nt_topo_load_buffer(buf, n, "flip.xml", err, sizeof err);
    if (t) {
      loaded++;
      char *s = nt_topo_to_json(t, nt_topo_current_env(t));
      free(s);
      nt_topo_free(t);
    } else {
      errors += strstr(err, "flip.xml") != NULL;
    }
  }
  CHECK(loaded > 0 && errors > 100);
  CHECK(nt_topo_load_file("/nonexistent/topo.xml", err, sizeof err) == NULL);
  CHECK(strstr(err, "/nonexistent/topo.xml") != NULL);
  CHECK(nt_topo_load_file("examples/topologies", err, sizeof err) == NULL);
  CHECK(strstr(err, "a directory; only a regular file is read") != NULL);
}

/* XML itself forbids most control characters, but allows tabs, newlines,
 * DEL and the C1 controls (U+009B is an 8-bit CSI to some terminals): every
 * string from the file reaches the model escaped. */
static void strings_from_the_file_are_escaped(void) {
  const char *xml = HEAD "<pci busid=\"0000:01:00.0&#x9b;2J\" class=\"0x020000\" link_speed=\"\" "
                         "link_width=\"16\"><nic><net name=\"mlx&#10;&#9;x&#127;\" dev=\"0\"/>"
                         "</nic></pci>" TAIL;
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, strlen(xml), "bad\033name.xml", err, sizeof err);
  if (!t) fprintf(stderr, "    %s\n", err);
  CHECK(t != NULL);
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, 0, &e);
  CHECK(!strcmp(e.name, "mlx\\x0a\\x09x\\x7f"));
  CHECK(!strcmp(e.busid, "0000:01:00.0\\xc2\\x9b2J"));
  char *s = nt_topo_to_json(t, nt_topo_current_env(t));
  CHECK(s != NULL && !strchr(s, '\033') && strstr(s, "bad\\\\x1bname.xml"));
  free(s);
  nt_topo_free(t);
}

/* What NCCL's own parser would refuse loads here, with a warning; the 17th
 * attribute is invisible to NCCL, so a GPU whose rank comes 17th is none. */
static void nccl_parser_limits_become_warnings(void) {
  char err[512];
  const char *xml = "<?xml version=\"1.0\"?>\n<system version=\"1\">\n\t<cpu numaid=\"0\"\n"
                    "arch=\"arm64\">" GPUPCI("0000:01:00.0")
                    "<gpu a1=\"\" a2=\"\" a3=\"\" a4=\"\" a5=\"\" a6=\"\" a7=\"\" a8=\"\" a9=\"\" "
                    "a10=\"\" a11=\"\" a12=\"\" a13=\"\" dev=\"0\" sm=\"90\" gdr=\"1\" rank=\"0\"/></pci>"
                    "<nic><net name=\"a&amp;b\" dev=\"0\"/></nic></cpu></system>";
  nt_topo *t = nt_topo_load_buffer(xml, strlen(xml), "w.xml", err, sizeof err);
  CHECK(t != NULL);
  CHECK(has_warning(t, "XML declaration") && has_warning(t, "tab between elements"));
  CHECK(has_warning(t, "several lines") && has_warning(t, "entity"));
  CHECK(has_warning(t, "keeps the first 16") && nt_topo_ngpus(t) == 0);
  nt_topo_free(t);
  size_t cap = 64 << 10;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  char *p = buf + sprintf(buf, HEAD);
  for (int i = 0; i < 300; i++) p += sprintf(p, "<nic><net name=\"n%d\" dev=\"%d\"/></nic>", i, i);
  sprintf(p, TAIL);
  t = nt_topo_load_buffer(buf, strlen(buf), "many.xml", err, sizeof err);
  free(buf);
  CHECK(t == NULL && strstr(err, "more than 128 network devices")); /* our own bound */
}

static void env_values_read_like_nccl(void) {
  nt_topo_env e;
  char err[256];
  nt_topo_env_defaults(&e);
  CHECK(e.version == NT_NCCL_228 && e.gdr_read == -2 && e.p2p_level == -1);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=NVL", err, sizeof err) == 0 && e.p2p_level == NT_PATH_NVL);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=2", err, sizeof err) == 0 && e.p2p_level == NT_PATH_PXB);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=0x3", err, sizeof err) == 0 && e.p2p_level == NT_PATH_PHB);
  CHECK(nt_topo_env_set(&e, "NCCL_NET_GDR_LEVEL=9", err, sizeof err) == 0 && e.gdr_level == NT_PATH_SYS);
  CHECK(nt_topo_env_set(&e, "NCCL_NET_GDR_LEVEL=1x", err, sizeof err) == 1 && e.gdr_level == NT_PATH_PIX);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=pxb", err, sizeof err) == -1 && e.p2p_level == NT_PATH_PHB);
  CHECK(strstr(err, "NCCL ignores it") != NULL);
  CHECK(nt_topo_env_set(&e, "NCCL_PXN_DISABLE=yes", err, sizeof err) == 1 && e.pxn_disable == 0);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_DISABLE=0x1", err, sizeof err) == 0 && e.p2p_disable == 1);
  CHECK(nt_topo_env_set(&e, "NCCL_NET_GDR_READ=99999999999", err, sizeof err) == -1);
  CHECK(nt_topo_env_set(&e, "NCCL_NET_GDR_READ=", err, sizeof err) == -1 && e.gdr_read == -2);
  CHECK(nt_topo_env_set(&e, "NCCL_NETDEVS_POLICY=max:2", err, sizeof err) == 0);
  CHECK(e.netdevs_policy == NT_NETDEVS_MAX && e.netdevs_max == 2);
  CHECK(nt_topo_env_set(&e, "NCCL_NETDEVS_POLICY=MAX:0", err, sizeof err) == 1);
  CHECK(e.netdevs_policy == NT_NETDEVS_AUTO);
  CHECK(nt_topo_env_set(&e, "NCCL_FOO=1", err, sizeof err) == -1 && strstr(err, "NCCL_FOO"));
  CHECK(nt_topo_env_set(&e, "NCCL_PXN_DISABLE", err, sizeof err) == -1);
  CHECK(nt_path_parse("SYS") == NT_PATH_SYS && nt_path_parse("P2C") == NT_PATH_P2C);
  CHECK(nt_path_parse("NET") == -1 && nt_path_parse("") == -1 && nt_path_parse("7") == NT_PATH_SYS);
  CHECK(nt_topo_version_parse("2.30") == NT_NCCL_230 && nt_topo_version_parse("2.28.9") == NT_NCCL_228);
  CHECK(nt_topo_version_parse("2.29") == -1);
  setenv("NCCL_P2P_LEVEL", "SYS", 1);
  setenv("NCCL_PXN_DISABLE", "1", 1);
  nt_topo_env_defaults(&e);
  int n = nt_topo_env_from_environ(&e, err, sizeof err);
  unsetenv("NCCL_P2P_LEVEL");
  unsetenv("NCCL_PXN_DISABLE");
  CHECK(n == 2 && e.p2p_level == NT_PATH_SYS && e.pxn_disable == 1);
}

/* Only NCCL_PXN_DISABLE=1 disables PXN (NCCL compares with 1). */
static void pxn_disable_two_keeps_pxn(void) {
  char err[256];
  nt_topo *t = nt_topo_load_file("examples/topologies/nvswitch-8gpu-8nic.xml", err, sizeof err);
  CHECK(t != NULL);
  nt_topo_env e;
  nt_topo_env_defaults(&e);
  CHECK(nt_topo_env_set(&e, "NCCL_PXN_DISABLE=2", err, sizeof err) == 0);
  CHECK(nt_topo_compute(t, &e, err, sizeof err) == 0);
  nt_topo_pair p;
  CHECK(nt_topo_pair_at(t, 0, 9, &p) && p.pxn);
  nt_topo_free(t);
}

/* The compact form: every matrix line of an 8 GPU x 8 NIC box within 80
 * columns, kind numbers in the cells, the kinds with the full marks
 * listed; --compact with --full is a usage error. */
static void cli_compact_form_fits_80_columns(void) {
  char out[] = "/tmp/nccltop-topo-compact-XXXXXX";
  int fd = mkstemp(out);
  CHECK(fd >= 0);
  close(fd);
  const char *ex = "examples/topologies/nvswitch-8gpu-8nic.xml";
  CHECK(tf_run_cli(out, NULL, 4, (const char *[]){"topo", ex, "--compact", "--full"}) == 2);
  CHECK(tf_run_cli(out, NULL, 3, (const char *[]){"topo", ex, "--compact"}) == 0);
  FILE *f = fopen(out, "r");
  CHECK(f != NULL);
  char line[512], all[1 << 14] = "";
  bool in_matrix = false, fits = true;
  int rows = 0;
  while (fgets(line, sizeof line, f)) {
    if (strlen(all) + strlen(line) < sizeof all) strcat(all, line);
    if (!strncmp(line, "       G0", 9)) in_matrix = true;
    if (in_matrix && line[0] == '\n') in_matrix = false;
    if (in_matrix) {
      rows++;
      fits = fits && strlen(line) <= 81; /* 80 and the newline */
    }
  }
  fclose(f);
  unlink(out);
  CHECK(rows == 17 && fits);
  CHECK(strstr(all, "GPU0    X  1  1  1  1  1  1  1  2  3  3  3  3  3  3  3    0\n"));
  CHECK(strstr(all, "1  NVL 370.8*") && strstr(all, "3  PXN 48*rx") && strstr(all, "x the GPU"));
}

static bool file_is(const char *path, const char *want) {
  char text[4096] = "";
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  if (strcmp(text, want) != 0) fprintf(stderr, "    got: %s", text);
  return strcmp(text, want) == 0;
}

/* A command-line mistake is one line (the whole usage followed it), and
 * counts read as English ("1 NIC"). */
static void cli_mistakes_are_one_line(void) {
  char out[] = "/tmp/nccltop-topo-err-XXXXXX";
  int fd = mkstemp(out);
  CHECK(fd >= 0);
  close(fd);
  const char *ex = "examples/topologies/pcie-2socket-4gpu.xml";
  CHECK(tf_run_cli("/dev/null", out, 3, (const char *[]){"topo", ex, "--bogus"}) == 2);
  CHECK(file_is(out, "nccltop topo: unexpected argument '--bogus'; try 'nccltop topo --help'\n"));
  CHECK(tf_run_cli("/dev/null", out, 1, (const char *[]){"topo"}) == 2);
  CHECK(file_is(out, "nccltop topo: which topology file? try 'nccltop topo --help'\n"));
  CHECK(tf_run_cli(out, NULL, 2, (const char *[]){"topo", ex}) == 0);
  char text[256] = "";
  FILE *f = fopen(out, "r");
  CHECK(f != NULL);
  CHECK(fgets(text, sizeof text, f) != NULL);
  fclose(f);
  unlink(out);
  CHECK(strstr(text, ": NCCL 2.28.9 rules, 4 GPUs, 1 NIC\n") != NULL);
}

/* Into a pipe the full matrix (scripts keep their format), unless COLUMNS
 * is in the environment: `COLUMNS=80 nccltop topo F | less` gets the
 * compact form (newcomer note #26). */
static void columns_in_the_environment_choose_the_form(void) {
  char out[] = "/tmp/nccltop-topo-cols-XXXXXX";
  int fd = mkstemp(out);
  CHECK(fd >= 0);
  close(fd);
  const char *ex = "examples/topologies/nvswitch-8gpu-8nic.xml";
  bool compact[3] = {false, false, false};
  const char *cols[3] = {NULL, "80", "400"};
  for (int k = 0; k < 3; k++) {
    if (cols[k])
      setenv("COLUMNS", cols[k], 1);
    else
      unsetenv("COLUMNS");
    CHECK(tf_run_cli(out, NULL, 2, (const char *[]){"topo", ex}) == 0);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    char line[512];
    while (fgets(line, sizeof line, f))
      compact[k] |= !strncmp(line, "GPU0    X  1  1", 15); /* kind numbers in the cells */
    fclose(f);
  }
  unsetenv("COLUMNS");
  unlink(out);
  CHECK(!compact[0] && compact[1] && !compact[2]);
}

static void cli_exit_codes_and_output(void) {
  char out[] = "/tmp/nccltop-topo-cli-XXXXXX";
  int fd = mkstemp(out);
  CHECK(fd >= 0);
  close(fd);
  const char *ex = "examples/topologies/grace-c2c.xml";
  CHECK(tf_run_cli(out, NULL, 1, (const char *[]){"topo"}) == 2);
  CHECK(tf_run_cli(out, NULL, 2, (const char *[]){"topo", "--help"}) == 0);
  CHECK(tf_run_cli(out, NULL, 4, (const char *[]){"topo", ex, "--nccl-version", "2.29"}) == 2);
  CHECK(tf_run_cli(out, NULL, 3, (const char *[]){"topo", ex, "--frobnicate"}) == 2);
  CHECK(tf_run_cli(out, NULL, 4, (const char *[]){"topo", ex, "--env", "NCCL_P2P_LEVEL=pxb"}) == 2);
  CHECK(tf_run_cli(out, NULL, 3, (const char *[]){"topo", ex, "--env"}) == 2);
  CHECK(tf_run_cli(out, NULL, 2, (const char *[]){"topo", "/nonexistent.xml"}) == 1);
  CHECK(tf_run_cli(out, NULL, 4, (const char *[]){"topo", ex, "--env", "NCCL_P2P_DISABLE=1"}) == 0);
  FILE *f = fopen(out, "r");
  CHECK(f != NULL);
  char text[1 << 14];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  CHECK(strstr(text, "GPU0") && strstr(text, "P2P level LOC") && strstr(text, "Legend"));
  CHECK(strstr(text, "NET1   mlx5_1") != NULL);
  CHECK(tf_run_cli(out, NULL, 4, (const char *[]){"topo", ex, "--json", "--nccl-version=2.30"}) == 0);
  f = fopen(out, "r");
  CHECK(f != NULL);
  n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  unlink(out);
  cJSON *root = cJSON_Parse(text);
  CHECK(root != NULL);
  cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "nccl_version");
  cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "pairs");
  bool ok = cJSON_IsString(v) && !strcmp(v->valuestring, "2.30.7") && cJSON_GetArraySize(pairs) == 12;
  cJSON *first = cJSON_GetArrayItem(pairs, 0);
  cJSON *hops = cJSON_GetObjectItemCaseSensitive(first, "hops");
  ok = ok && cJSON_IsNumber(hops) && hops->valueint == 3; /* GPU0 > DEV > DEV > GPU1 */
  cJSON_Delete(root);
  CHECK(ok);
}

int main(void) {
  unsetenv("COLUMNS"); /* the form into a file must not depend on the caller's shell */
  TEST_RUN(malformed_xml_names_file_and_line);
  TEST_RUN(missing_and_mistyped_attributes);
  TEST_RUN(inconsistent_machines_are_refused);
  TEST_RUN(absurd_sizes_are_bounded);
  TEST_RUN(largest_machine_computes);
  TEST_RUN(truncated_and_corrupted_files_never_crash);
  TEST_RUN(strings_from_the_file_are_escaped);
  TEST_RUN(nccl_parser_limits_become_warnings);
  TEST_RUN(env_values_read_like_nccl);
  TEST_RUN(pxn_disable_two_keeps_pxn);
  TEST_RUN(cli_exit_codes_and_output);
  TEST_RUN(cli_mistakes_are_one_line);
  TEST_RUN(cli_compact_form_fits_80_columns);
  TEST_RUN(columns_in_the_environment_choose_the_form);
  return TEST_DONE();
}
/* clang-format on */
