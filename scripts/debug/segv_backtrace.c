/* Debugging aid: LD_PRELOAD this to print a native backtrace ("module(+offset)") on SIGSEGV or
 * SIGABRT, for machines without gdb (the GPU machine). Resolve with addr2line -f -C -e module offset.
 *   cc -shared -fPIC -o segv_backtrace.so segv_backtrace.c */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_fatal(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  const char* msg = "\n*** native backtrace ***\n";
  write(2, msg, strlen(msg));
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, on_fatal);
  signal(SIGABRT, on_fatal);
}
