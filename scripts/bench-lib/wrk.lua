-- The request mix of scripts/bench, for wrk (run with one thread: -t1).
--
--   wrk -t1 -cC -dDs -s wrk.lua URL -- MODE KIND SESSIONS [WRITE_PERCENT [RUN [FIRST_WRITE [FIRST_SESSION]]]]
--
-- MODE   read   every request reads one session picked at random among SESSIONS
--        write  present+dismiss pairs (see below), nothing else
--        mix    WRITE_PERCENT % writes (default 10) from the same sequence, the rest random reads
--        health GET /livez: ModalStack's whole HTTP stack (routing, request id, access log,
--               metrics) without a session, the floor under its reads
-- KIND   modalstack  GET /v1/sessions/bench-N; POST …/presentations then POST …/dismiss {}
--        webdis      GET /LRANGE/bench-N/0/-1; GET /LPUSH/bench-N/<the same JSON> then GET /LPOP/bench-N
--        fixed       the ceiling: the modalstack read path (the server ignores it)
-- Sessions are "bench-F" … "bench-(F+SESSIONS-1)", F = FIRST_SESSION (default 0); they must
-- exist (scripts/bench loads them). Two wrk processes on two servers of one database take
-- disjoint ranges, so that no session is written through both.
--
-- Writes follow one sequence, w = 0, 1, 2, …: write w goes to session F + P(w mod SESSIONS),
-- where P(i) = (A*i + 7) mod SESSIONS is a bijection, and is a present when floor(w / SESSIONS)
-- is even, a dismiss when odd. So every session sees present, dismiss, present, … and a session is
-- revisited only after SESSIONS other writes: with SESSIONS much larger than the connection count
-- its present has been answered before its dismiss is sent, and every write is a real change (a
-- push, then a pop), never a refused one. A run starts the sequence at FIRST_WRITE (default 0)
-- and done() prints where it stopped ("next_write"), so that the next run on the same server goes
-- on from there. Each present carries its own payload ({"n": w, "run": RUN}).
--
-- wrk calls request() once before the run to check it (script_verify_request) and never sends
-- that request: the first call returns a read, so that no write of the sequence is skipped.
--
-- Headers given with -H (e.g. "Connection: close") are sent with every request. done() prints one
-- line "BENCH_RESULT key=value …" that scripts/bench-lib/bench.py parses (latencies in µs).

local mode, kind, sessions, write_percent, run, first_session
local headers_get, headers_post
local first = true
local A = 1000003
bench_next_write = 0 -- global: done() reads it from the thread with thread:get()

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

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
   bench_next_write = tonumber(args[6] or "0")
   first_session = tonumber(args[7] or "0")
   if A % sessions == 0 then A = 999983 end
   math.randomseed(os.time() + os.clock() * 1000000)
   headers_get = copy_headers()
   headers_post = copy_headers({["Content-Type"] = "application/json"})
end

local function read()
   local n = first_session + math.random(0, sessions - 1)
   if kind == "webdis" then
      return wrk.format("GET", "/LRANGE/bench-" .. n .. "/0/-1", headers_get)
   end
   return wrk.format("GET", "/v1/sessions/bench-" .. n, headers_get)
end

local function write()
   local w = bench_next_write
   bench_next_write = w + 1
   local n = first_session + (A * (w % sessions) + 7) % sessions
   if math.floor(w / sessions) % 2 == 0 then
      local body = '{"destination":"settings","payload":{"n":' .. w .. ',"run":' .. run .. '}}'
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
   if mode == "health" then return wrk.format("GET", "/livez", headers_get) end
   if mode == "mix" and math.random(1, 100) <= write_percent then return write() end
   return read()
end

function done(summary, latency, requests)
   local e = summary.errors
   local next_write = 0
   for _, thread in ipairs(threads) do
      next_write = math.max(next_write, thread:get("bench_next_write") or 0)
   end
   io.write(string.format(
      "BENCH_RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d "
         .. "connect=%d read=%d write=%d status=%d timeout=%d next_write=%d\n",
      summary.requests, summary.duration, summary.bytes,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      e.connect, e.read, e.write, e.status, e.timeout, next_write))
end
