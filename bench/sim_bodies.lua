-- wrk script for bench/run_scenarios.sh (overhead ceiling): POSTs the workload's real grader
-- request bodies to /v1/chat/completions, cycling through the file named by $HB_BODIES_FILE
-- (one JSON body per line, as `hb-workload-stats --dump-bodies` writes them). Each wrk thread
-- starts at a different offset. Counts non-200 answers.
local path = os.getenv("HB_BODIES_FILE")
assert(path, "set HB_BODIES_FILE")
local bodies = {}
for line in io.lines(path) do
  if #line > 0 then bodies[#bodies + 1] = line end
end
assert(#bodies > 0, "no bodies in " .. path)

local headers = { ["Content-Type"] = "application/json" }
local i = 0
local non200 = 0

function setup(thread)
  thread:set("offset", math.random(#bodies))
end

function request()
  i = i + 1
  local body = bodies[((i + (offset or 0)) % #bodies) + 1]
  return wrk.format("POST", "/v1/chat/completions", headers, body)
end

function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

function done(summary, latency, requests)
  io.write(string.format("bodies %d\n", #bodies))
end
