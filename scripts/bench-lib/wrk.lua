-- The request mix of scripts/bench, for wrk (one thread per wrk process).
--
--   wrk -t1 -cC -dDs -s wrk.lua URL -- MODE KIND SESSIONS [WRITE_PERCENT [RUN]]
--
-- MODE   read   every request reads one session picked at random among SESSIONS
--        write  present+dismiss pairs (see below), nothing else
--        mix    WRITE_PERCENT % writes from the same sequence, the rest random reads
-- KIND   modalstack  GET /v1/sessions/bench-N; POST …/presentations then POST …/dismiss
--        webdis      GET /LRANGE/bench-N/0/-1; GET /LPUSH/bench-N/<the same JSON> then GET /LPOP/bench-N
--        fixed       the ceiling: the modalstack read path (the server ignores it)
--
-- Writes walk the sessions in a fixed pseudo-random order (k -> (A*k + 7) mod SESSIONS, a
-- bijection): the first pass presents on every session, the next pass dismisses on every session,
-- and so on. A session is therefore revisited only after SESSIONS other writes, so with SESSIONS
-- much larger than the connection count its present has been answered before its dismiss is sent:
-- every write is a real change (a push, then a pop), never a refused one. Each present carries a
-- new payload ({"n": k, "run": RUN}, RUN unique per wrk run), so even a present landing on the same
-- key (after a run that stopped in the middle of a pass) changes the session.
--
-- wrk calls request() once before the run to check it (script_verify_request) and never sends
-- that request: the first call returns a read, so that no write of the sequence is lost. Sessions are "bench-0" … "bench-(SESSIONS-1)".
--
-- Headers given with -H (e.g. "Connection: close") are sent with every request. done() prints one
-- line "BENCH_RESULT key=value …" that scripts/bench-lib/bench.py parses (latencies in µs).

local mode, kind, sessions, write_percent
local headers_get, headers_post
local k = 0
local run = "0"
local first = true
local A = 1000003

local function copy_headers(extra)
   local headers = {}
   for name, value in pairs(wrk.headers) do headers[name] = value end
   for name, value in pairs(extra or {}) do headers[name] = value end
   return headers
end

function init(args)
   mode = args[1] or "read"
   kind = args[2] or "modalstack"
   sessions = tonumber(args[3] or "1000")
   write_percent = tonumber(args[4] or "10")
   run = args[5] or tostring(os.time())
   if A % sessions == 0 then A = 999983 end
   math.randomseed(os.time() + os.clock() * 1000000)
   headers_get = copy_headers()
   headers_post = copy_headers({["Content-Type"] = "application/json"})
end

local function read()
   local n = math.random(0, sessions - 1)
   if kind == "webdis" then
      return wrk.format("GET", "/LRANGE/bench-" .. n .. "/0/-1", headers_get)
   end
   return wrk.format("GET", "/v1/sessions/bench-" .. n, headers_get)
end

local function write()
   local index = k % sessions
   local pass = math.floor(k / sessions)
   local n = (A * index + 7) % sessions
   local count = k
   k = k + 1
   if pass % 2 == 0 then
      local body = '{"destination":"settings","payload":{"n":' .. count .. ',"run":' .. run .. '}}'
      if kind == "webdis" then
         -- The same JSON the ModalStack present carries, URL-encoded into webdis's path.
         local encoded = body:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end)
         return wrk.format("GET", "/LPUSH/bench-" .. n .. "/" .. encoded, headers_get)
      end
      return wrk.format("POST", "/v1/sessions/bench-" .. n .. "/presentations", headers_post, body)
   end
   if kind == "webdis" then
      return wrk.format("GET", "/LPOP/bench-" .. n, headers_get)
   end
   return wrk.format("POST", "/v1/sessions/bench-" .. n .. "/dismiss", headers_post, "{}")
end

function request()
   if first then
      first = false
      return read()
   end
   if mode == "write" then return write() end
   if mode == "mix" and math.random(1, 100) <= write_percent then return write() end
   return read()
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH_RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d "
         .. "connect=%d read=%d write=%d status=%d timeout=%d\n",
      summary.requests, summary.duration, summary.bytes,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      e.connect, e.read, e.write, e.status, e.timeout))
end
