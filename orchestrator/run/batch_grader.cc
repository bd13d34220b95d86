#include "orchestrator/run/batch_grader.h"

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/grading/grader_reply.h"
#include "grader/grader.h"
#include "llm/openai_llm_client.h"
#include "orchestrator/run/row_request.h"

namespace hb {
namespace {

absl::Status Internal(const absl::Status& status) {
  return status.ok() ? status : absl::InternalError(status.message());
}

// One input line; the body is spliced verbatim (re-serializing could change its bytes).
std::string InputLine(const std::string& custom_id, const std::string& body, GraderApi api) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("custom_id");
    WriteJsonString(w, custom_id);
    w.Key("method");
    w.String("POST");
    w.Key("url");
    WriteJsonString(w, GraderApiBatchUrl(api));
    w.Key("body");
    WriteRawJson(w, body, rapidjson::kObjectType);
    w.EndObject();
  });
}

// A final failure: retrying the same request cannot help (online grading does not retry
// these either).
bool FinalCode(absl::StatusCode code) {
  return code == absl::StatusCode::kInvalidArgument ||
         code == absl::StatusCode::kFailedPrecondition ||
         code == absl::StatusCode::kUnauthenticated ||
         code == absl::StatusCode::kPermissionDenied || code == absl::StatusCode::kNotFound;
}

struct LineResult {
  std::string custom_id;
  absl::StatusOr<Verdict> verdict = absl::UnknownError("unset");
  ChatUsage usage;
};

// One line of an output or error file, through the online path's parsers.
LineResult ParseResultLine(absl::string_view line, const BatchGradingOptions& options) {
  LineResult result;
  rapidjson::Document doc;
  if (!ParseJson(line, doc).ok() || !doc.IsObject()) {
    result.verdict = absl::DataLossError("batch result line is not a JSON object");
    return result;
  }
  absl::StatusOr<std::string> custom_id = JsonStringMember(doc, "custom_id");
  if (custom_id.ok()) result.custom_id = *custom_id;
  const rapidjson::Value* error = FindJsonMember(doc, "error");
  const rapidjson::Value* response = FindJsonMember(doc, "response");
  if (error != nullptr && error->IsObject()) {
    absl::StatusOr<std::string> code = JsonStringMember(*error, "code");
    absl::StatusOr<std::string> message = JsonStringMember(*error, "message");
    result.verdict =
        absl::UnavailableError(absl::StrCat("batch line error ", code.ok() ? *code : "(no code)",
                                            ": ", message.ok() ? *message : "(no message)"));
    return result;
  }
  if (response == nullptr || !response->IsObject()) {
    result.verdict = absl::DataLossError("batch result line has neither 'response' nor 'error'");
    return result;
  }
  HttpResponse http;
  const rapidjson::Value* status = FindJsonMember(*response, "status_code");
  const rapidjson::Value* body = FindJsonMember(*response, "body");
  if (status == nullptr || !status->IsInt() || body == nullptr) {
    result.verdict = absl::DataLossError("batch response without 'status_code' or 'body'");
    return result;
  }
  http.status_code = status->GetInt();
  http.body = body->IsString() ? std::string(body->GetString(), body->GetStringLength())
                               : WriteJson([&](JsonWriter& w) { body->Accept(w); });
  absl::StatusOr<ChatResult> chat =
      InterpretLlmResponse(http, options.api_key, options.settings.api);
  if (!chat.ok()) {
    result.verdict = chat.status();
    return result;
  }
  result.usage = chat->usage;
  if (absl::Status size =
          CheckGraderReplySize(chat->content.size(), options.limits, options.settings.max_tokens);
      !size.ok()) {
    result.verdict = std::move(size);
    return result;
  }
  result.verdict = ParseGraderReply(chat->content);
  return result;
}

}  // namespace

std::string BatchCustomId(const RowKey& key) {
  return absl::StrCat(key.checkpoint, "/", key.prompt_id, "/", key.rubric_index);
}

BatchGrader::BatchGrader(BatchApi& api, VerdictStore& store, BatchJournal& journal,
                         const GraderTemplate& grader_template, Scheduler& scheduler,
                         BatchGradingOptions options)
    : api_(api),
      store_(store),
      journal_(journal),
      template_(grader_template),
      scheduler_(scheduler),
      options_(std::move(options)) {}

void BatchGrader::RequestStop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  cv_.SignalAll();
}

bool BatchGrader::Stopping() {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool BatchGrader::Wait(absl::Duration d) {
  uint64_t seen;
  {
    absl::MutexLock lock(&mu_);
    seen = wakeups_;
  }
  // The timer only bumps a counter; the wait ends at it or at a stop request.
  const Scheduler::TimerId timer = scheduler_.Schedule(d, [this] {
    absl::MutexLock lock(&mu_);
    ++wakeups_;
    cv_.SignalAll();
  });
  bool stopped;
  {
    absl::MutexLock lock(&mu_);
    while (!stop_ && wakeups_ == seen) cv_.Wait(&mu_);
    stopped = stop_;
  }
  if (stopped) scheduler_.CancelTimer(timer);
  return !stopped;
}

absl::Status BatchGrader::Load(std::vector<PlannedRow> rows) {
  rows_ = std::move(rows);
  attempts_.assign(rows_.size(), 0);
  for (size_t i = 0; i < rows_.size(); ++i) index_[BatchCustomId(rows_[i].Key())] = i;
  absl::StatusOr<std::vector<BatchRecord>> batches = journal_.Batches();
  HB_RETURN_IF_ERROR(Internal(batches.status()));
  absl::flat_hash_map<std::string, size_t> unfinished;
  for (BatchRecord& record : *batches) {
    int64_t number = 0;
    if (absl::SimpleAtoi(absl::StripPrefix(record.name, "batch-"), &number)) {
      next_batch_ = std::max(next_batch_, number + 1);
    }
    if (record.state == "done") {
      ++progress_.states["done"];
      continue;
    }
    unfinished[record.name] = active_.size();
    Active active;
    active.record = std::move(record);
    active.info.status = active.record.state;
    active_.push_back(std::move(active));
  }
  absl::StatusOr<std::vector<BatchRowEntry>> entries = journal_.BatchRows();
  HB_RETURN_IF_ERROR(Internal(entries.status()));
  for (const BatchRowEntry& entry : *entries) {
    auto row = index_.find(BatchCustomId(entry.key));
    if (row == index_.end()) continue;  // graded since, or not in this run's plan
    attempts_[row->second] = entry.attempts;
    auto batch = unfinished.find(entry.batch);
    if (batch != unfinished.end()) active_[batch->second].rows.push_back(row->second);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<size_t>> BatchGrader::ReadyRows() {
  std::vector<bool> pending(rows_.size(), false);
  for (const Active& a : active_) {
    for (size_t i : a.rows) pending[i] = true;
  }
  std::vector<size_t> ready;
  std::vector<RowKey> exhausted;
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (pending[i]) continue;
    if (attempts_[i] >= options_.max_attempts) {
      // Its last failure was journaled as "send again" just before a kill; the budget is spent.
      RowRecord record;
      record.key = rows_[i].Key();
      record.attempts = attempts_[i];
      record.batch = true;
      record.error = absl::StrCat("UNAVAILABLE: no usable batch answer (attempt ", attempts_[i],
                                  " of ", options_.max_attempts, ")");
      record.time = absl::Now();
      exhausted.push_back(record.key);
      store_.Append(std::move(record), nullptr);
      ++progress_.failed_rows;
      continue;
    }
    // Rows that failed a batch before a kill: online with the fallback, else batched again.
    if (options_.fallback_online && attempts_[i] > 0) {
      fallback_.push_back(i);
    } else {
      ready.push_back(i);
    }
  }
  if (!exhausted.empty()) {
    HB_RETURN_IF_ERROR(Internal(store_.Flush()));
    HB_RETURN_IF_ERROR(Internal(journal_.ForgetBatchRows(exhausted)));
  }
  return ready;
}

absl::StatusOr<BatchOutcome> BatchGrader::Run(std::vector<PlannedRow> rows) {
  HB_RETURN_IF_ERROR(Load(std::move(rows)));
  HB_ASSIGN_OR_RETURN(std::vector<size_t> ready, ReadyRows());
  if (!active_.empty()) {
    HB_LOG_INFO("batch: resuming {} journaled batch(es) not finished", active_.size());
  }
  for (Active& a : active_) {
    if (a.record.state == "written" || a.record.state == "uploaded") HB_RETURN_IF_ERROR(Start(a));
  }
  bool interrupted = false;
  while (true) {
    if (!ready.empty()) {
      HB_RETURN_IF_ERROR(Submit(ready));
      ready.clear();
      if (Stopping()) {
        interrupted = true;  // rows not written yet go in the next run's batches
        break;
      }
    }
    if (active_.empty()) break;
    HB_RETURN_IF_ERROR(PollOnce(ready));
    Report();
    if (!ready.empty()) continue;
    if (!active_.empty() && !Wait(options_.poll_interval)) {
      interrupted = true;
      break;
    }
  }
  BatchOutcome outcome;
  outcome.progress = progress_;
  outcome.interrupted = interrupted;
  for (size_t i : fallback_) outcome.fallback_rows.push_back(rows_[i]);
  return outcome;
}

absl::StatusOr<BatchOutcome> BatchGrader::CancelAll(std::vector<PlannedRow> rows) {
  HB_RETURN_IF_ERROR(Load(std::move(rows)));
  for (Active& a : active_) {
    if (a.record.state == "submitted") {
      absl::StatusOr<BatchInfo> info = api_.CancelBatch(a.record.batch_id);
      HB_RETURN_IF_ERROR(info.status());
      a.info = *info;
      std::fprintf(stderr, "hb-orchestrator run: batch %s (%s): %s\n", a.record.batch_id.c_str(),
                   a.record.name.c_str(), info->status.c_str());
    } else {
      // Never created upstream (or its creation was not journaled): nothing will answer it.
      a.info.status = "cancelled";
    }
  }
  std::vector<size_t> unanswered;
  while (!active_.empty()) {
    HB_RETURN_IF_ERROR(PollOnce(unanswered));
    Report();
    if (!active_.empty() && !Wait(options_.poll_interval)) break;
  }
  BatchOutcome outcome;
  outcome.progress = progress_;
  outcome.interrupted = true;
  return outcome;
}

absl::Status BatchGrader::Submit(const std::vector<size_t>& ready) {
  HB_RETURN_IF_ERROR(Internal(MakeDirs(options_.dir)));
  size_t next = 0;
  while (next < ready.size()) {
    if (Stopping()) return absl::OkStatus();
    Active active;
    active.record.name = absl::StrFormat("batch-%06d", next_batch_++);
    active.record.input_path = absl::StrCat(options_.dir, "/", active.record.name, ".jsonl");
    const std::string partial = active.record.input_path + ".partial";
    std::FILE* file = std::fopen(partial.c_str(), "wb");
    if (file == nullptr) {
      return absl::InternalError(absl::StrCat("cannot write batch input ", partial));
    }
    int64_t bytes = 0;
    std::vector<BatchRowEntry> entries;
    bool ok = true;
    while (next < ready.size() &&
           static_cast<int64_t>(active.rows.size()) < options_.max_requests) {
      const size_t i = ready[next];
      const std::string line = InputLine(BatchCustomId(rows_[i].Key()),
                                         BuildRowRequestBody(template_, options_.settings, rows_[i],
                                                             options_.send_prompt_cache_key),
                                         options_.settings.api) +
                               "\n";
      if (!active.rows.empty() &&
          bytes + static_cast<int64_t>(line.size()) > options_.max_file_bytes) {
        break;
      }
      ok = ok && std::fwrite(line.data(), 1, line.size(), file) == line.size();
      bytes += static_cast<int64_t>(line.size());
      active.rows.push_back(i);
      entries.push_back(BatchRowEntry{rows_[i].Key(), active.record.name, ++attempts_[i]});
      ++next;
    }
    ok = std::fclose(file) == 0 && ok;
    if (!ok || std::rename(partial.c_str(), active.record.input_path.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("cannot write batch input ", partial));
    }
    active.record.requests = static_cast<int64_t>(active.rows.size());
    active.record.state = "written";
    HB_RETURN_IF_ERROR(Internal(journal_.SaveBatch(active.record, entries)));
    active.info.status = "written";
    HB_RETURN_IF_ERROR(Start(active));
    active_.push_back(std::move(active));
  }
  return absl::OkStatus();
}

absl::Status BatchGrader::Start(Active& a) {
  if (a.record.state == "uploaded") {
    // A killed run may have created the batch without journaling its id.
    HB_ASSIGN_OR_RETURN(std::vector<BatchInfo> listed, api_.ListBatches());
    for (const BatchInfo& info : listed) {
      if (info.input_file_id == a.record.file_id) {
        a.record.batch_id = info.id;
        a.record.state = "submitted";
        a.info = info;
        return Internal(journal_.SaveBatch(a.record, {}));
      }
    }
  } else {
    HB_ASSIGN_OR_RETURN(a.record.file_id, api_.UploadFile(a.record.input_path));
    a.record.state = "uploaded";
    HB_RETURN_IF_ERROR(Internal(journal_.SaveBatch(a.record, {})));
  }
  HB_ASSIGN_OR_RETURN(a.info, api_.CreateBatch(a.record.file_id));
  a.record.batch_id = a.info.id;
  a.record.state = "submitted";
  ++progress_.batches_created;
  HB_LOG_INFO("batch: {} ({} requests) submitted as {}", a.record.name, a.record.requests,
              a.record.batch_id);
  return Internal(journal_.SaveBatch(a.record, {}));
}

absl::Status BatchGrader::PollOnce(std::vector<size_t>& retry) {
  std::vector<Active> still;
  for (Active& a : active_) {
    if (a.record.state == "submitted" && !a.info.Terminal()) {
      HB_ASSIGN_OR_RETURN(a.info, api_.GetBatch(a.record.batch_id));
    }
    if (a.info.Terminal()) {
      HB_RETURN_IF_ERROR(Record(a, retry));
    } else {
      still.push_back(std::move(a));
    }
  }
  active_ = std::move(still);
  return absl::OkStatus();
}

absl::Status BatchGrader::Record(Active& a, std::vector<size_t>& retry) {
  absl::flat_hash_map<size_t, LineResult> answers;
  for (const std::string* file_id : {&a.info.output_file_id, &a.info.error_file_id}) {
    if (file_id->empty()) continue;
    HB_ASSIGN_OR_RETURN(std::string content, api_.FileContent(*file_id));
    for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipWhitespace())) {
      LineResult result = ParseResultLine(line, options_);
      progress_.prompt_tokens += result.usage.prompt_tokens;
      progress_.cached_tokens += result.usage.cached_tokens;
      progress_.completion_tokens += result.usage.completion_tokens;
      auto row = index_.find(result.custom_id);
      if (row == index_.end()) {
        HB_LOG_WARN("batch {}: a result line for unknown custom_id '{}' ignored", a.info.id,
                    result.custom_id);
        continue;
      }
      answers.insert_or_assign(row->second, std::move(result));
    }
  }
  std::vector<RowKey> forget;
  const absl::Time now = absl::Now();
  for (size_t i : a.rows) {
    auto it = answers.find(i);
    absl::StatusOr<Verdict> verdict =
        it != answers.end()
            ? it->second.verdict
            : absl::StatusOr<Verdict>(absl::UnavailableError(absl::StrCat(
                  "no answer for this row in batch ", a.info.id, " (status ", a.info.status, ")")));
    RowRecord record;
    record.key = rows_[i].Key();
    record.attempts = attempts_[i];
    record.batch = true;
    record.time = now;
    if (it != answers.end()) {
      record.prompt_tokens = it->second.usage.prompt_tokens;
      record.cached_tokens = it->second.usage.cached_tokens;
      record.completion_tokens = it->second.usage.completion_tokens;
    }
    if (verdict.ok()) {
      record.ok = true;
      record.criteria_met = verdict->criteria_met;
      record.explanation = verdict->explanation;
      record.simulated = api_.simulated();
      ++progress_.ok_rows;
    } else if (FinalCode(verdict.status().code()) || attempts_[i] >= options_.max_attempts) {
      record.error = absl::StrCat(absl::StatusCodeToString(verdict.status().code()), ": ",
                                  verdict.status().message(), " (attempt ", attempts_[i], " of ",
                                  options_.max_attempts, ")");
      ++progress_.failed_rows;
    } else {
      ++progress_.retried_rows;
      (options_.fallback_online ? fallback_ : retry).push_back(i);
      continue;
    }
    forget.push_back(record.key);
    store_.Append(std::move(record), nullptr);
  }
  HB_RETURN_IF_ERROR(Internal(store_.Flush()));
  HB_RETURN_IF_ERROR(Internal(journal_.ForgetBatchRows(forget)));
  a.record.state = "done";
  ++progress_.states["done"];
  progress_.requests_completed += a.info.completed;
  progress_.requests_failed += a.info.failed;
  return Internal(journal_.SaveBatch(a.record, {}));
}

void BatchGrader::Report() {
  BatchProgress p = progress_;
  for (const Active& a : active_) {
    ++p.states[a.info.status];
    p.requests_completed += a.info.completed;
    p.requests_failed += a.info.failed;
  }
  if (options_.on_progress) options_.on_progress(p);
}

}  // namespace hb
