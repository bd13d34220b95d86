// ors_fake_server: serves the ORS API over a FakeEnvironment (two tasks in split "dev", one in
// "test") for trying the ORS Python client by hand (scripts/ors_client_check.py); not a test.
//   ors_fake_server [PORT [GRADING_SECONDS]]
// PORT defaults to 8080; each reply takes GRADING_SECONDS (default 0) to grade, to watch the
// client ride out a long call on pings. Prints "listening on 127.0.0.1:PORT", and on
// SIGINT/SIGTERM the number of replies graded.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/clock.h"
#include "environment/http/ors_http_server.h"
#include "tests/testing/fake_environment.h"

int main(int argc, char** argv) {
  hb::testing::FakeEnvironment env;
  env.AddTask("dev", {"prompt-0", {"theme:emergency_referrals"}, "user: I have chest pain."});
  env.AddTask("dev", {"prompt-1", {"theme:context_seeking"}, "user: Is ibuprofen safe?"});
  env.AddTask("test", {"prompt-2", {}, "user: What is a fever?"});
  const int grading_seconds = argc > 2 ? std::atoi(argv[2]) : 0;
  if (grading_seconds > 0) {
    env.SetResultFn([grading_seconds](const std::string& task_id, const std::string& reply) {
      absl::SleepFor(absl::Seconds(grading_seconds));  // a stand-in for a slow judge
      hb::env::SubmitResult result;
      result.task_id = task_id;
      result.points_possible = 1;
      result.points_met = reply.empty() ? 0 : 1;
      result.reward = result.reward_clipped = result.points_met;
      return result;
    });
  }
  hb::env::OrsServerOptions options;
  options.listen = absl::StrCat("127.0.0.1:", argc > 1 ? argv[1] : "8080");
  auto server = hb::env::OrsHttpServer::Start(env, hb::Clock::Real(), options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%d\n", (*server)->port());
  std::fflush(stdout);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Shutdown();
  std::printf("graded %d replies\n", env.submissions());
  return 0;
}
