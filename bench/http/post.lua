-- wrk: every request a POST of a JSON body (`[1]`, or $BODY) to the given URL;
-- at the end one line for bench/http/run.sh to read.
wrk.method = "POST"
wrk.body = os.getenv("BODY") or "[1]"
wrk.headers["Content-Type"] = "application/json"

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT rps=%.1f p50_us=%.1f p99_us=%.1f requests=%d non2xx=%d socket_errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), summary.requests,
    e.status, e.connect + e.read + e.write + e.timeout))
end
