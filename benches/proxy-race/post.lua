-- wrk script of benches/proxy-race.sh: POST the body in $RACE_BODY as JSON, and at the
-- end print one machine-readable line (latencies in microseconds, from wrk's own
-- histogram of whole responses: a stream counts once its last byte arrived).

local path = os.getenv("RACE_BODY")
if path == nil then
  error("RACE_BODY is not set: the request body file to send")
end
local file = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
-- What an agent sends its proxy: a placeholder, never a provider key.
wrk.headers["Authorization"] = "Bearer race-placeholder"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RACE requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d status_errors=%d\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
