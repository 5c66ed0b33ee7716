// glibc's malloc keeps the free space between live chunks of its heaps: after a burst of uploads
// (a 30 KB buffer per image, freed by V8's GC seconds later) about 16 MB of free pages stayed
// resident for the daemon's lifetime. malloc_trim(0) hands every whole free page back to the
// kernel (madvise); node has no call for it, hence this addon (N-API, so one build serves every
// node version on its CPU). Elsewhere than glibc it does nothing and says so.
//
// releaseNodePages: node's own binary is most of an idle daemon's RSS (37 of 54 MB here), and
// most of that was read once, at start-up (the JavaScript sources of node's built-in modules, its
// snapshot, code run once); an idle daemon touches about 11 MB of it again. MADV_DONTNEED on those
// mappings drops this process's page-table entries only: the pages stay in the page cache, and a
// page touched later faults back in from there (a minor fault), the same bytes. The binary is the
// file that holds node's own N-API (the executable, or a distribution's libnode.so), found by the
// address of one of its functions rather than by name, so that what is released is what this code
// runs in. Of its mappings only those that are private, not writable and hold no anonymous page
// qualify: RELRO (relocated by the loader, then made read-only) holds copied pages, and dropping
// them would lose the relocations. Linux only (smaps); elsewhere it releases nothing. Under a
// user-mode emulator (qemu-user, as packaging/check-arm64.sh runs the arm64 package) smaps may be
// the host's view while maps is the emulated program's: the two must agree on the mapping that
// holds node's code, or nothing is released.
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#endif

static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value out;
  napi_get_boolean(env, released != 0, &out);
  return out;
}

static napi_value Supported(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
#if defined(__GLIBC__)
  napi_get_boolean(env, 1, &out);
#else
  napi_get_boolean(env, 0, &out);
#endif
  return out;
}

#if defined(__linux__)
struct mapping { uintptr_t start, end; unsigned long inode; unsigned int major, minor; int clean; };

enum { MAX_MAPPINGS = 16384 };

/* A mapping's head line (the same in maps and smaps) into `m` and its permissions; 0 for other lines. */
static int parse_head(const char *line, struct mapping *m, char perms[8]) {
  unsigned long start, end;
  if (sscanf(line, "%lx-%lx %7s %*x %x:%x %lu", &start, &end, perms, &m->major, &m->minor, &m->inode) != 6) return 0;
  m->start = start; m->end = end;
  return 1;
}

/* The mapping of /proc/self/maps that holds `code`, or 0 when none does (or maps is unreadable). */
static int maps_mapping_of(uintptr_t code, struct mapping *out) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[4352];
  char perms[8];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = parse_head(line, out, perms) && out->start <= code && code < out->end;
  fclose(f);
  return found;
}

/* Bytes of address space advised (not all of it was resident); -1 when smaps cannot be read. */
static double release_node_pages(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  struct mapping *maps = calloc(MAX_MAPPINGS, sizeof *maps);
  if (!maps) { fclose(f); return -1; }
  size_t n = 0;
  int anon_seen = 0;
  char line[4352];
  while (fgets(line, sizeof line, f)) {
    struct mapping m;
    char perms[8];
    if (parse_head(line, &m, perms)) {
      /* A mapping counts as clean only once its Anonymous line has said 0 kB. */
      if (n > 0 && !anon_seen) maps[n - 1].clean = 0;
      if (n == MAX_MAPPINGS) break;
      m.clean = perms[1] != 'w' && perms[3] == 'p' && m.inode != 0;
      maps[n++] = m;
      anon_seen = 0;
    } else if (n > 0 && strncmp(line, "Anonymous:", 10) == 0) {
      unsigned long kb = 1;
      if (sscanf(line + 10, "%lu", &kb) != 1 || kb != 0) maps[n - 1].clean = 0;
      anon_seen = 1;
    }
  }
  if (n > 0 && !anon_seen) maps[n - 1].clean = 0;
  fclose(f);
  uintptr_t code = (uintptr_t)&napi_create_double;
  const struct mapping *own = NULL;
  for (size_t i = 0; i < n && !own; i++) if (maps[i].start <= code && code < maps[i].end && maps[i].inode != 0) own = &maps[i];
  struct mapping seen;
  if (own && !(maps_mapping_of(code, &seen) && seen.start == own->start && seen.end == own->end && seen.inode == own->inode)) own = NULL;
  double released = 0;
  for (size_t i = 0; own && i < n; i++) {
    const struct mapping *m = &maps[i];
    if (!m->clean || m->inode != own->inode || m->major != own->major || m->minor != own->minor) continue;
    if (madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) == 0) released += (double)(m->end - m->start);
  }
  free(maps);
  return own ? released : 0;
}
#endif

static napi_value ReleaseNodePages(napi_env env, napi_callback_info info) {
  (void)info;
  double released = 0;
#if defined(__linux__)
  released = release_node_pages();
#endif
  napi_value out;
  napi_create_double(env, released, &out);
  return out;
}

NAPI_MODULE_INIT() {
  napi_value trim;
  napi_value supported;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &trim);
  napi_set_named_property(env, exports, "trim", trim);
  napi_create_function(env, "supported", NAPI_AUTO_LENGTH, Supported, NULL, &supported);
  napi_set_named_property(env, exports, "supported", supported);
  napi_value release;
  napi_create_function(env, "releaseNodePages", NAPI_AUTO_LENGTH, ReleaseNodePages, NULL, &release);
  napi_set_named_property(env, exports, "releaseNodePages", release);
  return exports;
}
