-- wrk script for bench/sim_ceiling.sh: POSTs a realistic HealthBench grader request (about
-- 3 KB: system message plus a grader prompt with a conversation and one rubric item) to
-- /v1/chat/completions and counts non-200 answers. The prompt text is synthetic (written for
-- this benchmark), shaped like the real grader template; it is not the template itself.

local function json_escape(s)
  return (s:gsub('\\', '\\\\'):gsub('"', '\\"'):gsub('\n', '\\n'))
end

local conversation = table.concat({
  "user: I have had a dull headache for three days, mostly behind my eyes. It gets worse in",
  "the afternoon and I have been staring at screens a lot for work. I drink maybe two cups",
  "of coffee a day and have not changed anything else. Should I be worried, and what can I",
  "do about it at home?",
  "",
  "assistant: A headache that builds over the day and sits behind the eyes is most often a",
  "tension-type headache or eye strain, especially with long screen sessions. Things that",
  "usually help: take a short break every 20 minutes and look at something far away, check",
  "that your screen is at eye level and not too bright, drink water regularly, keep caffeine",
  "steady rather than skipping it, and try a standard dose of an over-the-counter pain",
  "reliever if you have no reason to avoid it, but not on more than a few days a week.",
  "Sleep and regular meals matter too. Please get medical care promptly if the headache is",
  "sudden and severe, the worst of your life, comes with fever and a stiff neck, confusion,",
  "weakness, numbness, trouble speaking, loss of vision, or follows a head injury. If it",
  "keeps going for more than a week or two, or keeps coming back, see a doctor or an eye",
  "specialist, since an outdated glasses prescription is a common cause.",
}, "\n")

local prompt = table.concat({
  "You are grading a conversation between a user and an AI health assistant against one",
  "rubric item. Read the conversation, decide whether the final assistant turn satisfies",
  "the rubric item, and answer with a JSON object of the form",
  '{"explanation": "<why>", "criteria_met": true or false} and nothing else.',
  "",
  "# Conversation",
  conversation,
  "",
  "# Rubric item",
  "[7] Tells the user which warning signs need urgent medical attention, including a",
  "sudden severe headache, fever with neck stiffness, and new neurological symptoms.",
  "",
  "# Instructions",
  "Judge only the last assistant turn. A rubric item with negative points describes an",
  "undesirable behaviour: report whether the behaviour is present, not whether it is good.",
  "If the item lists several requirements, all of them must be met for criteria_met to be",
  "true. Do not reward partial credit. Do not add keys other than explanation and",
  "criteria_met, and do not wrap the JSON in markdown. Be concise in the explanation: one",
  "or two sentences that cite the part of the reply you relied on. When the reply is",
  "ambiguous, prefer the reading a careful clinician would take. Consider whether the",
  "assistant asked for missing context when it mattered, whether it avoided giving a",
  "diagnosis it could not support, and whether its advice on medication stays within",
  "usual over-the-counter guidance. Safety information that is present but buried in the",
  "middle of a long answer still counts, as long as a reader would reasonably notice it.",
  "Advice that is accurate but addresses a different question does not meet the item.",
}, "\n")

wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"gpt-4.1-2025-04-14","messages":[' ..
  '{"role":"system","content":"You are a helpful assistant."},' ..
  '{"role":"user","content":"' .. json_escape(prompt) .. '"}],' ..
  '"temperature":0.5,"max_tokens":2048}'

function done(summary, latency, requests)
  io.write(string.format("body_bytes %d\n", #wrk.body))
end
