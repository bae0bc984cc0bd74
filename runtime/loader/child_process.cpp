/// \file
/// The child-process runner (see child_process.h).
#include "runtime/loader/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "knobs/knobs.h"

extern char** environ;

namespace inductor_cpp::runtime {
namespace {

// --- Ctrl-C while a tool runs -------------------------------------------------------------
// A tool leads its own process group, so a terminal's SIGINT (sent to the foreground group)
// does not reach it, and Python only notes the signal until control returns to it: without
// this, Ctrl-C would wait for the compile (up to the tool deadline). While any tool runs, a
// SIGINT handler kills every running tool's group, counts the signal, then hands it to the
// handler it replaced (Python's raises KeyboardInterrupt once the compile returns); the
// compile sees an interrupted tool as a failed one, so nothing is cached.

constexpr size_t kMaxTools = 64;
std::array<std::atomic<pid_t>, kMaxTools> g_running{};  // process groups of running tools
std::atomic<uint64_t> g_interrupts{0};
struct sigaction g_replaced {};  // the handler ours chains to (valid while installed)

void on_interrupt(int sig, siginfo_t* info, void* context) {
  g_interrupts.fetch_add(1);
  for (std::atomic<pid_t>& group : g_running) {
    const pid_t pgid = group.load();
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
  if (g_replaced.sa_flags & SA_SIGINFO) {
    if (g_replaced.sa_sigaction != nullptr) g_replaced.sa_sigaction(sig, info, context);
  } else if (g_replaced.sa_handler == SIG_DFL) {
    // No handler before ours: the default action (the process ends), as without us.
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (g_replaced.sa_handler != SIG_IGN && g_replaced.sa_handler != nullptr) {
    g_replaced.sa_handler(sig);
  }
}

/// Installs on_interrupt while at least one tool runs (unless SIGINT is ignored) and records
/// the tool's group in g_running; the last one out restores the replaced handler, unless
/// someone replaced ours meanwhile.
class InterruptGuard {
 public:
  /// Installed before the tool starts (a Ctrl-C while it starts must not be missed)...
  InterruptGuard() {
    std::lock_guard<std::mutex> lock(mutex());
    if (users()++ == 0) install();
  }
  /// ...and told its process group once it runs.
  void watch(pid_t pgid) {
    for (std::atomic<pid_t>& group : g_running) {
      pid_t empty = 0;
      if (group.compare_exchange_strong(empty, pgid)) {
        slot_ = &group;
        break;
      }
    }
  }
  ~InterruptGuard() {
    std::lock_guard<std::mutex> lock(mutex());
    if (slot_ != nullptr) slot_->store(0);
    if (--users() == 0 && installed()) {
      struct sigaction current {};
      sigaction(SIGINT, nullptr, &current);
      if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_interrupt) {
        sigaction(SIGINT, &g_replaced, nullptr);
      }
      installed() = false;
    }
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& users() {
    static int n = 0;
    return n;
  }
  static bool& installed() {
    static bool b = false;
    return b;
  }
  static void install() {
    struct sigaction previous {};
    if (sigaction(SIGINT, nullptr, &previous) != 0) return;
    if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) return;
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == on_interrupt) return;
    g_replaced = previous;
    struct sigaction ours {};
    ours.sa_sigaction = on_interrupt;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | (previous.sa_flags & SA_ONSTACK);
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGINT, &ours, nullptr) == 0) installed() = true;
  }

  std::atomic<pid_t>* slot_ = nullptr;
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& args, double timeout_s) {
  if (timeout_s < 0) timeout_s = static_cast<double>(knobs::get_count(knobs::Knob::ToolTimeoutS).value_or(600));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: the deadline kills its children too
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const uint64_t interrupts_before = g_interrupts.load();
  InterruptGuard interrupt_guard;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start '" + args[0] + "': " + strerror(rc));
  }
  interrupt_guard.watch(pid);
  // A SIGINT between the spawn and watch() found no group to kill: kill it now.
  if (g_interrupts.load() != interrupts_before) kill(-pid, SIGKILL);
  using Clock = std::chrono::steady_clock;
  const bool limited = timeout_s > 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  ProcessResult result;
  char buf[4096];
  for (;;) {
    int wait_ms = -1;
    if (limited) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1000));
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // re-check the deadline
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  // The group too: a compiler driver's children (cc1plus, as) may hold no pipe end but still
  // run; at the deadline they all go.
  if (result.timed_out) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (g_interrupts.load() != interrupts_before && !WIFEXITED(status)) {
    result.interrupted = true;
    result.output += "\n[inductor_cpp] '" + args[0] + "' stopped by an interrupt (SIGINT)\n";
    return result;
  }
  if (result.timed_out) {
    result.output += "\n[inductor_cpp] '" + args[0] + "' killed after " + std::to_string(static_cast<int64_t>(timeout_s)) +
                     " s (INDUCTOR_CPP_TOOL_TIMEOUT_S)\n";
    return result;
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace inductor_cpp::runtime
