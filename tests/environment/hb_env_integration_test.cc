// The hb-env binary against hb-llm-sim on loopback: it prints its listening line, serves the
// splits, grades a reply end to end and answers the resubmission from its cache.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "healthbench/env/v1/env.grpc.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"

namespace hb {
namespace {

namespace env_v1 = ::healthbench::env::v1;
using ::hb::testing::BinaryDir;
using ::hb::testing::ChildProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// hb-env with its embedded grader against `base_url`, splits test (main head 30) and consensus,
// plus `extra` flags (or `splits` instead of those two); its gRPC port in `*port`.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartEnv(
    const std::string& base_url, const std::vector<std::string>& extra, int* port,
    std::vector<std::string> splits = {
        "--split=test=" + testing::SharedDataFile(testing::kMainHead30),
        "--split=consensus=" + testing::SharedDataFile(testing::kConsensus104)}) {
  std::vector<std::string> args = {BinaryDir() + "/environment/hb-env"};
  args.insert(args.end(), splits.begin(), splits.end());
  args.insert(args.end(),
              {"--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0",
               "--metrics-listen=", "--llm-base-url=" + base_url,
               "--grader-template=" + testing::ReferenceTemplatePath(), "--log-level=warn"});
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<ChildProcess>> env = ChildProcess::Spawn(args);
  if (!env.ok()) return env.status();
  absl::StatusOr<std::string> line = (*env)->ReadFirstLine(absl::Seconds(30));
  if (!line.ok()) return line.status();
  if (!absl::StartsWith(*line, "grpc listening on 127.0.0.1:") ||
      !absl::SimpleAtoi(line->substr(line->rfind(':') + 1), port) || *port <= 0) {
    return absl::InternalError("hb-env printed: " + *line);
  }
  return env;
}

TEST(HbEnvIntegrationTest, GradesAgainstTheSimulatorAndCachesResubmissions) {
  absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim({});
  ASSERT_TRUE(sim.ok()) << sim.status();
  int port = 0;
  absl::StatusOr<std::unique_ptr<ChildProcess>> env = StartEnv(sim->base_url, {}, &port);
  ASSERT_TRUE(env.ok()) << env.status();

  auto stub = env_v1::Environment::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  env_v1::ListSplitsResponse splits;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->ListSplits(&context, {}, &splits).ok());
  }
  ASSERT_EQ(splits.splits_size(), 2);
  EXPECT_EQ(splits.splits(1).task_count(), 104);

  env_v1::SubmitRequest request;
  request.mutable_task()->set_split("test");
  request.mutable_task()->set_index(0);
  request.set_reply("Call emergency services now.");
  env_v1::SubmitResponse first;
  env_v1::SubmitResponse second;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    grpc::Status status = stub->Submit(&context, request, &first);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_GT(first.items_size(), 0);
  EXPECT_GT(first.points_possible(), 0);
  EXPECT_EQ(first.reward(), first.points_met() / first.points_possible());
  EXPECT_FALSE(first.from_cache());
  EXPECT_GT(first.usage().prompt_tokens(), 0);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Submit(&context, request, &second).ok());
  }
  EXPECT_TRUE(second.from_cache());
  EXPECT_EQ(second.reward(), first.reward());
  EXPECT_EQ((*env)->Stop(SIGTERM, absl::Seconds(30)), 0);
}

// The official files together (issue 31): Hard is a subset of main by prompt_id, Consensus
// (in full) too, with its own rubric. hb-env starts with all three, a task is (split, id), and a
// bare id that two splits hold is refused naming them.
TEST(HbEnvIntegrationTest, MainHardAndConsensusLoadTogetherAndTasksResolveWithinTheirSplit) {
  absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim({});
  ASSERT_TRUE(sim.ok()) << sim.status();
  int port = 0;
  absl::StatusOr<std::unique_ptr<ChildProcess>> env =
      StartEnv(sim->base_url, {}, &port,
               {"--split=main=" + testing::SharedDataFile(testing::kMainHead30),
                "--split=hard=" + testing::SharedDataFile(testing::kHardHead4),
                "--split=consensus=" + testing::SharedDataFile(testing::kConsensus104)});
  ASSERT_TRUE(env.ok()) << env.status();
  auto stub = env_v1::Environment::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  env_v1::ListTasksRequest list;
  list.set_split("hard");
  env_v1::ListTasksResponse hard;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->ListTasks(&context, list, &hard).ok());
  }
  ASSERT_EQ(hard.tasks_size(), 4);
  const std::string id = hard.tasks(0).task_id();
  env_v1::GetTaskRequest get;
  get.mutable_task()->set_task_id(id);
  get.mutable_task()->set_split("hard");
  env_v1::GetTaskResponse task;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->GetTask(&context, get, &task).ok());
  }
  EXPECT_EQ(task.task().split(), "hard");
  EXPECT_EQ(task.task().index(), 0);
  get.mutable_task()->clear_split();
  grpc::ClientContext context;
  const grpc::Status bare = stub->GetTask(&context, get, &task);
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bare.error_message(), HasSubstr("is in 2 splits ('main', 'hard')"));
  EXPECT_EQ((*env)->Stop(SIGTERM, absl::Seconds(30)), 0);
}

// A listen address already in use exits 2 (a bad flag value) naming the flag and the address.
TEST(HbEnvIntegrationTest, AnAddressInUseExitsTwoNamingItsFlag) {
  absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim({});
  ASSERT_TRUE(sim.ok()) << sim.status();
  const int held = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(held, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string in_use = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  for (const std::string& flag : std::vector<std::string>{"--listen", "--http-listen"}) {
    SCOPED_TRACE(flag);
    const testing::ProcessResult result = testing::RunProcess(
        {BinaryDir() + "/environment/hb-env",
         "--split=test=" + testing::SharedDataFile(testing::kMainHead30),
         flag == "--listen" ? "--listen=" + in_use : "--listen=127.0.0.1:0",
         flag == "--http-listen" ? "--http-listen=" + in_use : "--http-listen=127.0.0.1:0",
         "--metrics-listen=", "--llm-base-url=" + sim->base_url,
         "--grader-template=" + testing::ReferenceTemplatePath(), "--log-level=warn"},
        {"OPENAI_API_KEY="}, absl::Seconds(60));
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat(flag, "=", in_use, ": ")));
    EXPECT_THAT(result.err, HasSubstr(absl::StrCat("give ", flag, " a free address")));
  }
  close(held);
}

// A self-hosted judge behind a gateway: hb-env's embedded grader sends the --llm-header and
// --llm-extra-body the endpoint requires, and rewards come back.
TEST(HbEnvIntegrationTest, GradesThroughAJudgeThatNeedsAHeaderAndAnExtraBody) {
  absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim(
      {"--require-header=api-key=judge-key", "--require-body-key=guided_json"});
  ASSERT_TRUE(sim.ok()) << sim.status();
  int port = 0;
  absl::StatusOr<std::unique_ptr<ChildProcess>> env = StartEnv(
      sim->base_url,
      {"--llm-header=api-key=judge-key", R"(--llm-extra-body={"guided_json":{"type":"object"}})"},
      &port);
  ASSERT_TRUE(env.ok()) << env.status();
  auto stub = env_v1::Environment::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  env_v1::SubmitRequest request;
  request.mutable_task()->set_split("test");
  request.mutable_task()->set_index(1);
  request.set_reply("See a doctor today.");
  env_v1::SubmitResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  grpc::Status status = stub->Submit(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(response.items_size(), 0);
  EXPECT_GT(response.usage().prompt_tokens(), 0);
  EXPECT_EQ((*env)->Stop(SIGTERM, absl::Seconds(30)), 0);
}

// An hb-grader on 127.0.0.1:0 with `extra` flags; its port in `*port`.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartGrader(const std::string& base_url,
                                                          const std::vector<std::string>& extra,
                                                          int* port) {
  std::vector<std::string> args = {BinaryDir() + "/grader_service/hb-grader",
                                   "--listen=127.0.0.1:0",
                                   "--metrics-listen=",
                                   "--llm-base-url=" + base_url,
                                   "--grader-template=" + testing::ReferenceTemplatePath(),
                                   "--log-level=warn"};
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<ChildProcess>> grader = ChildProcess::Spawn(args);
  if (!grader.ok()) return grader.status();
  absl::StatusOr<std::string> line = (*grader)->ReadFirstLine(absl::Seconds(30));
  if (!line.ok()) return line.status();
  if (!absl::SimpleAtoi(line->substr(line->rfind(':') + 1), port)) {
    return absl::InternalError("hb-grader printed: " + *line);
  }
  return grader;
}

TEST(HbEnvIntegrationTest, GraderReplicasThatDisagreeAreRefusedAtStart) {
  absl::StatusOr<testing::LlmSim> sim = testing::StartLlmSim({});
  ASSERT_TRUE(sim.ok()) << sim.status();
  int port_a = 0, port_b = 0;
  auto a = StartGrader(sim->base_url, {}, &port_a);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = StartGrader(sim->base_url, {"--llm-max-tokens=99"}, &port_b);
  ASSERT_TRUE(b.ok()) << b.status();
  // No API key here: replicas check their own upstream, hb-env does not preflight it.
  const testing::ProcessResult env =
      testing::RunProcess({BinaryDir() + "/environment/hb-env",
                           "--split=test=" + testing::SharedDataFile(testing::kMainHead30),
                           absl::StrCat("--grader=ipv4:127.0.0.1:", port_a, ",127.0.0.1:", port_b),
                           "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0",
                           "--metrics-listen=", "--log-level=warn"},
                          {"OPENAI_API_KEY="}, absl::Seconds(60));
  // It exits before listening, with the code of a configuration error.
  EXPECT_EQ(env.out, "");
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_THAT(env.err, HasSubstr("graders disagree on max_tokens: replica "));
  EXPECT_THAT(env.err, Not(HasSubstr("API key")));
}

// Environment that turns off the proxies a CI machine may set (a proxy resolves the host, so
// the resolver check is skipped with one) and the API key.
const std::vector<std::string> kNoKeyNoProxy = {
    "OPENAI_API_KEY=", "ALL_PROXY=", "all_proxy=", "https_proxy=", "HTTPS_PROXY=", "http_proxy="};

// hb-env (embedded grader) and hb-grader refuse an upstream they cannot call within seconds,
// before reading their data or listening, with exit status 2 and the reason: no key for a
// remote https endpoint (the default, OpenAI's), or a host that does not resolve (.invalid
// never does).
TEST(HbEnvIntegrationTest, AnUpstreamWithoutKeyOrAddressIsRefusedAtStart) {
  const std::vector<std::string> env = {
      BinaryDir() + "/environment/hb-env",
      "--split=test=" + testing::SharedDataFile(testing::kMainHead30),
      "--listen=127.0.0.1:0",
      "--http-listen=127.0.0.1:0",
      "--metrics-listen=",
      "--grader-template=" + testing::ReferenceTemplatePath()};
  const std::vector<std::string> grader = {
      BinaryDir() + "/grader_service/hb-grader", "--listen=127.0.0.1:0",
      "--metrics-listen=", "--grader-template=" + testing::ReferenceTemplatePath()};
  for (const std::vector<std::string>& argv : {env, grader}) {
    const std::string name = argv[0].substr(argv[0].rfind('/') + 1);
    SCOPED_TRACE(name);
    absl::Time start = absl::Now();
    testing::ProcessResult no_key = testing::RunProcess(argv, kNoKeyNoProxy, absl::Seconds(60));
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    EXPECT_EQ(no_key.exit_code, 2);
    EXPECT_EQ(no_key.out, "");
    EXPECT_EQ(no_key.err,
              name +
                  ": no API key for https://api.openai.com/v1 (the default --llm-base-url): set "
                  "$OPENAI_API_KEY or --llm-api-key-file, or give --llm-base-url a server that "
                  "needs none (on this machine, or plain http:// inside the cluster: vLLM, "
                  "hb-llm-sim); an https server that takes no key accepts any placeholder key\n");

    std::vector<std::string> unresolvable = argv;
    unresolvable.push_back("--llm-base-url=http://hb-preflight-test.invalid:8000/v1");
    start = absl::Now();
    testing::ProcessResult no_host =
        testing::RunProcess(unresolvable, kNoKeyNoProxy, absl::Seconds(60));
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    EXPECT_EQ(no_host.exit_code, 2);
    EXPECT_EQ(no_host.out, "");
    EXPECT_THAT(no_host.err,
                StartsWith(name + ": cannot resolve host 'hb-preflight-test.invalid' of "
                                  "--llm-base-url http://hb-preflight-test.invalid:8000/v1: "));
    EXPECT_THAT(no_host.err, HasSubstr("(no request was sent)\n"));
  }
}

// The HTTP limit flags are checked before anything starts: out of bounds (the shared check,
// cli/http_limit_flags.h), or a body limit that a reply of --max-reply-bytes would not fit.
TEST(HbEnvIntegrationTest, HttpLimitFlagsAreCheckedAtStart) {
  const std::vector<std::string> argv = {
      BinaryDir() + "/environment/hb-env",
      "--split=test=" + testing::SharedDataFile(testing::kMainHead30), "--listen=127.0.0.1:0",
      "--http-listen=127.0.0.1:0", "--metrics-listen="};
  std::vector<std::string> no_headers = argv;
  no_headers.push_back("--max-headers=0");
  testing::ProcessResult result = testing::RunProcess(no_headers);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "hb-env: --max-headers must be in [1, 10000], got 0 (see hb-env --help)\n");
  std::vector<std::string> small_body = argv;
  small_body.push_back("--max-body-bytes=1000");
  result = testing::RunProcess(small_body);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "hb-env: --max-body-bytes (1000) is below --max-reply-bytes (1048576): a reply of "
            "that size could not be posted over HTTP; raise --max-body-bytes (see hb-env "
            "--help)\n");
}

}  // namespace
}  // namespace hb
