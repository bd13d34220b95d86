#include "tests/testing/redis_server.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/testing/shared_data.h"

namespace hb::testing {
namespace {

constexpr char kRedisServer[] = "/usr/bin/redis-server";
constexpr char kSetpriv[] = "/usr/bin/setpriv";

}  // namespace

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& password) {
  std::unique_ptr<RedisServer> server(new RedisServer());
  server->dir_ = MakeTempDir();
  server->socket_ = server->dir_ + "/redis.sock";
  server->password_ = password;
  absl::Status status = server->Launch();
  if (!status.ok()) return status;
  return server;
}

RedisServer::~RedisServer() {
  if (process_ != nullptr) {
    kill(process_->pid(), SIGCONT);
    process_->Stop(SIGTERM, absl::Seconds(10));
  }
}

absl::Status RedisServer::Launch() {
  if (access(kRedisServer, X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(kRedisServer,
                                            " is missing: install redis-server "
                                            "(scripts/deps.txt, stage test)"));
  }
  // Through setpriv (util-linux, Essential): redis-server gets SIGKILL when the thread that
  // started it dies, so a test killed by ctest's timeout or a crash leaves no server behind.
  std::vector<std::string> argv = {kSetpriv,     "--pdeathsig",      "KILL", "--",
                                   kRedisServer, "--port",           "0",    "--unixsocket",
                                   socket_,      "--unixsocketperm", "700",  "--save",
                                   "",           "--appendonly",     "no",   "--dir",
                                   dir_,         "--logfile",        "",     "--daemonize",
                                   "no"};
  if (!password_.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(password_);
  }
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(argv);
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  absl::StatusOr<std::string> ready =
      process_->ReadUntilLineContaining("ready to accept connections", absl::Seconds(20));
  return ready.status();
}

void RedisServer::Kill() {
  if (process_ == nullptr) return;
  kill(process_->pid(), SIGCONT);
  process_.reset();  // SIGKILL and reap
}

absl::Status RedisServer::Restart() {
  Kill();
  return Launch();
}

void RedisServer::Pause() {
  if (process_ != nullptr) kill(process_->pid(), SIGSTOP);
}

void RedisServer::Resume() {
  if (process_ != nullptr) kill(process_->pid(), SIGCONT);
}

absl::StatusOr<std::string> RedisServer::Command(const std::vector<std::string>& words) const {
  redisContext* context = redisConnectUnix(socket_.c_str());
  if (context == nullptr || context->err != 0) {
    std::string why = context == nullptr ? "out of memory" : context->errstr;
    if (context != nullptr) redisFree(context);
    return absl::UnavailableError(why);
  }
  auto run = [context](const std::vector<std::string>& w) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& s : w) {
      argv.push_back(s.data());
      lens.push_back(s.size());
    }
    return static_cast<redisReply*>(
        redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lens.data()));
  };
  if (!password_.empty()) freeReplyObject(run({"AUTH", password_}));
  redisReply* reply = run(words);
  if (reply == nullptr) {
    std::string why = context->errstr;
    redisFree(context);
    return absl::UnavailableError(why);
  }
  std::string text = reply->type == REDIS_REPLY_INTEGER ? std::to_string(reply->integer)
                     : reply->str != nullptr            ? std::string(reply->str, reply->len)
                                                        : "";
  freeReplyObject(reply);
  redisFree(context);
  return text;
}

}  // namespace hb::testing
