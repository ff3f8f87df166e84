#ifndef C_FORGE_NGHTTP2_H
#define C_FORGE_NGHTTP2_H

#include <nghttp2/nghttp2.h>

// Expression macros that do not import into Swift (they are `sizeof` or arithmetic expressions).
// Remove a wrapper when the macro it stands for imports as a constant.
static inline size_t CForgeNGHTTP2_protoALPNLength(void) { return NGHTTP2_PROTO_ALPN_LEN; }
static inline int32_t CForgeNGHTTP2_initialWindowSize(void) { return NGHTTP2_INITIAL_WINDOW_SIZE; }
static inline int32_t CForgeNGHTTP2_maxWindowSize(void) { return NGHTTP2_MAX_WINDOW_SIZE; }

// Names the calling thread as `top -H`, `perf` and /proc show it (Linux keeps 15 bytes). glibc
// declares pthread_setname_np only under _GNU_SOURCE, which a module map cannot set first.
#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline void CForgeNGHTTP2_nameThread(const char *name) { (void)pthread_setname_np(pthread_self(), name); }

#endif
