#ifndef C_FORGE_NGHTTP2_H
#define C_FORGE_NGHTTP2_H

#include <nghttp2/nghttp2.h>

// Names the calling thread as `top -H`, `perf` and /proc show it (Linux keeps 15 bytes). glibc
// declares pthread_setname_np only under _GNU_SOURCE, which a module map cannot set first.
#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline void CForgeNGHTTP2_nameThread(const char *name) { (void)pthread_setname_np(pthread_self(), name); }

#endif
