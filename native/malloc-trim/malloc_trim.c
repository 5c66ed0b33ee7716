// glibc's malloc keeps the free space between live chunks of its heaps: after a burst of uploads
// (a 30 KB buffer per image, freed by V8's GC seconds later) about 16 MB of free pages stayed
// resident for the daemon's lifetime. malloc_trim(0) hands every whole free page back to the
// kernel (madvise); node has no call for it, hence this addon (N-API, so one build serves every
// node version on its CPU). Elsewhere than glibc it does nothing and says so.
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
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

NAPI_MODULE_INIT() {
  napi_value trim;
  napi_value supported;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &trim);
  napi_set_named_property(env, exports, "trim", trim);
  napi_create_function(env, "supported", NAPI_AUTO_LENGTH, Supported, NULL, &supported);
  napi_set_named_property(env, exports, "supported", supported);
  return exports;
}
