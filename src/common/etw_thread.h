/* etw_thread.h - the few thread primitives the pipeline uses: POSIX threads
 * where they exist (ThreadSanitizer understands them; glibc's C11 threads
 * bypass its interceptors), C11 <threads.h> elsewhere. Each call returns 0 on
 * success. */
#ifndef ETW_THREAD_H
#define ETW_THREAD_H

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>

typedef pthread_mutex_t etw_mutex;
typedef pthread_cond_t etw_cond;
typedef pthread_t etw_thread;
typedef void *(*etw_thread_fn)(void *);
#define ETW_THREAD_RETURN void *

static inline int etw_mutex_init(etw_mutex *m) { return pthread_mutex_init(m, NULL); }
static inline void etw_mutex_destroy(etw_mutex *m) { pthread_mutex_destroy(m); }
static inline void etw_mutex_lock(etw_mutex *m) { pthread_mutex_lock(m); }
static inline void etw_mutex_unlock(etw_mutex *m) { pthread_mutex_unlock(m); }
static inline int etw_cond_init(etw_cond *c) { return pthread_cond_init(c, NULL); }
static inline void etw_cond_destroy(etw_cond *c) { pthread_cond_destroy(c); }
static inline void etw_cond_wait(etw_cond *c, etw_mutex *m) { pthread_cond_wait(c, m); }
static inline void etw_cond_signal(etw_cond *c) { pthread_cond_signal(c); }
static inline void etw_cond_broadcast(etw_cond *c) { pthread_cond_broadcast(c); }
static inline int etw_thread_start(etw_thread *t, etw_thread_fn fn, void *arg) {
    return pthread_create(t, NULL, fn, arg);
}
static inline void etw_thread_join(etw_thread t) { pthread_join(t, NULL); }
#else
#include <threads.h>

typedef mtx_t etw_mutex;
typedef cnd_t etw_cond;
typedef thrd_t etw_thread;
typedef int (*etw_thread_fn)(void *);
#define ETW_THREAD_RETURN int

static inline int etw_mutex_init(etw_mutex *m) { return mtx_init(m, mtx_plain) != thrd_success; }
static inline void etw_mutex_destroy(etw_mutex *m) { mtx_destroy(m); }
static inline void etw_mutex_lock(etw_mutex *m) { mtx_lock(m); }
static inline void etw_mutex_unlock(etw_mutex *m) { mtx_unlock(m); }
static inline int etw_cond_init(etw_cond *c) { return cnd_init(c) != thrd_success; }
static inline void etw_cond_destroy(etw_cond *c) { cnd_destroy(c); }
static inline void etw_cond_wait(etw_cond *c, etw_mutex *m) { cnd_wait(c, m); }
static inline void etw_cond_signal(etw_cond *c) { cnd_signal(c); }
static inline void etw_cond_broadcast(etw_cond *c) { cnd_broadcast(c); }
static inline int etw_thread_start(etw_thread *t, etw_thread_fn fn, void *arg) {
    return thrd_create(t, fn, arg) != thrd_success;
}
static inline void etw_thread_join(etw_thread t) { thrd_join(t, NULL); }
#endif

#endif
