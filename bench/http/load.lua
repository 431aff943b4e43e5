-- wrk script of bench/http/load.sh: POSTs `[1]` to the path given by the
-- URL and counts the answers by status, per thread, summed in done().
wrk.method = "POST"
wrk.body = "[1]"
wrk.headers["Content-Type"] = "application/json"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local keys = {}
  for status in pairs(total) do table.insert(keys, status) end
  table.sort(keys)
  for _, status in ipairs(keys) do
    io.write(string.format("status %d %d\n", status, total[status]))
  end
  io.write(string.format("errors connect %d read %d write %d timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
