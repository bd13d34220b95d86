#include "common/quota/redis_quota_store.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <csignal>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hb {
namespace {

// LocalQuotaStore::Lease in Lua (keep the two in step). KEYS[1]: the budget's hash. Times in
// milliseconds from Redis's clock. Returns {granted, wait in microseconds, rpm, tpm}.
constexpr char kLeaseScript[] = R"lua(
local a = ARGV
local prio, want, minw, tpr = tonumber(a[1]), tonumber(a[2]), tonumber(a[3]), tonumber(a[4])
local debt, pause = tonumber(a[5]), tonumber(a[6])
local crpm, ctpm, lrpm, ltpm = tonumber(a[7]), tonumber(a[8]), tonumber(a[9]), tonumber(a[10])
local headroom, burst, reserve = tonumber(a[11]), tonumber(a[12]), tonumber(a[13])
local iwin, ttl = tonumber(a[14]), tonumber(a[15])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local s = redis.call('HMGET', KEYS[1], 'rl', 'tl', 'ts', 'pu', 'is', 'lr', 'lt', 'ar', 'at')
local rl, tl, ts = tonumber(s[1]) or 0, tonumber(s[2]) or 0, tonumber(s[3])
local pu, is = tonumber(s[4]) or 0, tonumber(s[5]) or -1e15
local lr, lt = tonumber(s[6]) or 0, tonumber(s[7]) or 0
local ar, at = tonumber(s[8]) or 0, tonumber(s[9]) or 0
if lrpm > 0 then lr = lrpm end
if ltpm > 0 then lt = ltpm end
local rpm = lr
if crpm > 0 then rpm = crpm end
local tpm = lt
if ctpm > 0 then tpm = ctpm end
local least = math.max(1, math.min(minw, want))
local room = 1 / (1 - reserve)
local function shape(pm, minc)
  if pm <= 0 then return 0, 0 end
  local rate = pm * headroom / 60000
  return rate, math.max(rate * burst, minc)
end
local rr, rc = shape(rpm, least * room)
local tr, tc = shape(tpm, least * tpr * room)
local elapsed = 0
if ts then elapsed = math.max(0, now - ts) end
if ar <= 0 then rl = rc end
if at <= 0 then tl = tc end
rl = math.min(rc, rl + elapsed * rr)
tl = math.min(tc, tl + elapsed * tr)
tl = math.min(tc, tl - debt)
if pause > 0 then pu = math.max(pu, now + pause) end
local granted, wait = 0, 0
if want > 0 then
  if prio == 0 then is = now end
  if now < pu then
    wait = pu - now
  else
    local share = 0
    if prio == 1 and now - is < iwin then share = reserve end
    local rf, tf = share * rc, share * tc
    local function fits(rate, level, floor, cost)
      if rate <= 0 or cost <= 0 then return want end
      return math.max(0, math.floor((level - floor) / cost))
    end
    local function untl(rate, level, floor, cost)
      if rate <= 0 then return 0 end
      return math.max(0, (floor + cost - level) / rate)
    end
    local g = math.min(want, fits(rr, rl, rf, 1), fits(tr, tl, tf, tpr))
    if g >= least then
      granted = g
      if rr > 0 then rl = rl - g end
      if tr > 0 then tl = tl - g * tpr end
    else
      wait = math.max(1, untl(rr, rl, rf, least), untl(tr, tl, tf, least * tpr))
    end
  end
end
redis.call('HSET', KEYS[1], 'rl', rl, 'tl', tl, 'ts', now, 'pu', pu, 'is', is,
           'lr', lr, 'lt', lt, 'ar', rpm, 'at', tpm)
redis.call('PEXPIRE', KEYS[1], ttl)
return {granted, math.ceil(wait * 1000), rpm, tpm}
)lua";

timeval TimevalOf(absl::Duration d) { return absl::ToTimeval(d); }

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// One command (binary-safe words); null on an I/O error or timeout (see context->errstr).
Reply RunCommand(redisContext* context, const std::vector<std::string>& words) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& w : words) {
    argv.push_back(w.data());
    lens.push_back(w.size());
  }
  return Reply(static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lens.data())));
}

std::string ErrorText(const redisReply& reply) { return std::string(reply.str, reply.len); }

// A Redis error reply about credentials.
bool IsAuthError(const std::string& text) {
  return absl::StartsWith(text, "NOAUTH") || absl::StartsWith(text, "WRONGPASS") ||
         absl::StrContains(text, "invalid password") ||
         absl::StrContains(text, "without any password");
}

}  // namespace

RedisQuotaStore::RedisQuotaStore(RedisQuotaStoreOptions options) : options_(std::move(options)) {}

RedisQuotaStore::~RedisQuotaStore() {
  absl::MutexLock lock(&mu_);
  DisconnectLocked();
}

absl::StatusOr<std::unique_ptr<RedisQuotaStore>> RedisQuotaStore::Connect(
    RedisQuotaStoreOptions options) {
  // hiredis writes with write(2): a Redis that went away must not end the process.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  std::unique_ptr<RedisQuotaStore> store(new RedisQuotaStore(std::move(options)));
  absl::MutexLock lock(&store->mu_);
  absl::Status status = store->ConnectLocked();
  if (!status.ok()) return status;
  return store;
}

void RedisQuotaStore::DisconnectLocked() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

absl::Status RedisQuotaStore::ConnectLocked() {
  DisconnectLocked();
  const RedisEndpoint& e = options_.endpoint;
  const std::string name = RedisEndpointName(e);
  const timeval connect_timeout = TimevalOf(options_.connect_timeout);
  context_ = e.unix_path.empty()
                 ? redisConnectWithTimeout(e.host.c_str(), e.port, connect_timeout)
                 : redisConnectUnixWithTimeout(e.unix_path.c_str(), connect_timeout);
  if (context_ == nullptr || context_->err != 0) {
    std::string why = context_ == nullptr ? "out of memory" : context_->errstr;
    DisconnectLocked();
    return absl::UnavailableError(absl::StrCat("cannot reach Redis at ", name, ": ", why));
  }
  redisSetTimeout(context_, TimevalOf(options_.timeout));
  // Each step: the command's words, and what its failure means.
  std::vector<std::vector<std::string>> steps;
  if (!e.password.empty()) {
    steps.push_back(e.username.empty() ? std::vector<std::string>{"AUTH", e.password}
                                       : std::vector<std::string>{"AUTH", e.username, e.password});
  }
  if (e.db != 0) steps.push_back({"SELECT", std::to_string(e.db)});
  steps.push_back({"SCRIPT", "LOAD", kLeaseScript});
  for (const std::vector<std::string>& words : steps) {
    Reply reply = RunCommand(context_, words);
    if (reply == nullptr) {
      std::string why = context_->errstr;
      DisconnectLocked();
      return absl::UnavailableError(absl::StrCat("Redis at ", name, ": ", why));
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      const std::string text = ErrorText(*reply);
      DisconnectLocked();
      if (IsAuthError(text)) {
        return absl::PermissionDeniedError(
            absl::StrCat("Redis at ", name, " refused the credentials (", text,
                         "): give its password in the URL or in --quota-redis-password-file"));
      }
      return absl::InternalError(
          absl::StrCat("Redis at ", name, " answered ", words[0], ": ", text));
    }
    if (words[0] == "SCRIPT") script_sha_ = std::string(reply->str, reply->len);
  }
  return absl::OkStatus();
}

absl::StatusOr<LeaseReply> RedisQuotaStore::Lease(const LeaseRequest& request) {
  absl::MutexLock lock(&mu_);
  if (context_ == nullptr) {
    if (absl::Status s = ConnectLocked(); !s.ok()) return absl::UnavailableError(s.message());
  }
  const QuotaShape& shape = options_.shape;
  const std::vector<std::string> args = {
      request.priority == QuotaPriority::kInteractive ? "0" : "1",
      std::to_string(request.requests),
      std::to_string(request.min_requests),
      std::to_string(request.tokens_per_request),
      std::to_string(request.token_debt),
      std::to_string(absl::ToInt64Milliseconds(request.pause)),
      std::to_string(request.configured.rpm),
      std::to_string(request.configured.tpm),
      std::to_string(request.learned.rpm),
      std::to_string(request.learned.tpm),
      absl::StrCat(shape.headroom),
      std::to_string(absl::ToInt64Milliseconds(shape.burst)),
      absl::StrCat(shape.interactive_reserve),
      std::to_string(absl::ToInt64Milliseconds(shape.interactive_window)),
      std::to_string(absl::ToInt64Milliseconds(options_.key_ttl))};
  Reply reply;
  for (const bool by_sha : {true, false}) {
    std::vector<std::string> words = {by_sha ? "EVALSHA" : "EVAL",
                                      by_sha ? script_sha_ : kLeaseScript, "1", options_.key};
    words.insert(words.end(), args.begin(), args.end());
    reply = RunCommand(context_, words);
    if (reply == nullptr) {
      std::string why = context_->errstr;
      DisconnectLocked();
      return absl::UnavailableError(
          absl::StrCat("Redis at ", RedisEndpointName(options_.endpoint), ": ", why));
    }
    // After a restart or SCRIPT FLUSH: send the script itself (EVAL caches it again).
    if (!(reply->type == REDIS_REPLY_ERROR && absl::StartsWith(ErrorText(*reply), "NOSCRIPT"))) {
      break;
    }
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string text = ErrorText(*reply);
    DisconnectLocked();  // e.g. NOAUTH after a restart with a new password: reconnect next time
    if (IsAuthError(text)) return absl::PermissionDeniedError(absl::StrCat("Redis: ", text));
    return absl::UnavailableError(absl::StrCat("Redis: ", text));
  }
  bool shaped = reply->type == REDIS_REPLY_ARRAY && reply->elements == 4;
  for (size_t i = 0; shaped && i < 4; ++i) shaped = reply->element[i]->type == REDIS_REPLY_INTEGER;
  if (!shaped) return absl::InternalError("Redis: unexpected reply to the quota script");
  LeaseReply out;
  out.requests = reply->element[0]->integer;
  out.tokens = out.requests * request.tokens_per_request;
  out.wait = absl::Microseconds(reply->element[1]->integer);
  out.limits.rpm = reply->element[2]->integer;
  out.limits.tpm = reply->element[3]->integer;
  return out;
}

}  // namespace hb
