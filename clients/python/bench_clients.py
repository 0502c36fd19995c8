"""Samples per second through the verl adapter as verl 0.9.1's reward loop
calls it (`verl/experimental/reward_loop/reward_manager/naive.py`: a sync
`compute_score` on the loop's default executor, min(32, cpus + 4)
threads; an async one awaited on the loop), against every request sent at
once from threads of its own. A local server answers each request after
LATENCY seconds, as judges would.

    python3 clients/python/bench_clients.py [N] [LATENCY]
"""

import asyncio
import http.server
import json
import os
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import redjury_client  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 48
LATENCY = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
ROW = {"reward": 0.5, "reward_from": "judges", "status": "scored", "gate": {"passed": True},
       "rubrics": []}


class Judged(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(LATENCY)
        data = json.dumps(ROW).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True


def sample(i):
    return dict(data_source="redline", solution_str="/x.docx",
                ground_truth={"task": "t", "trial": str(i)}, extra_info={})


async def verl_sync():
    loop = asyncio.get_running_loop()
    await asyncio.gather(*[loop.run_in_executor(None, lambda i=i: redjury_client.compute_score(**sample(i)))
                           for i in range(N)])


async def verl_async():
    await asyncio.gather(*[redjury_client.compute_score_async(**sample(i)) for i in range(N)])


def all_at_once(url):
    body = json.dumps({"task": "t", "path": "/x.docx"}).encode()
    threads = [threading.Thread(target=lambda: urllib.request.urlopen(
        urllib.request.Request(url + "/v1/score", data=body, method="POST")).read())
        for _ in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def timed(f):
    started = time.monotonic()
    f()
    return N / (time.monotonic() - started)


def main():
    server = Server(("127.0.0.1", 0), Judged)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ["REDJURY_URL"] = url
    print(f"{N} samples, {LATENCY:.2f} s per request, {os.cpu_count()} cores")
    for name, f in [("requests all at once (threads)", lambda: all_at_once(url)),
                    ("verl, sync compute_score", lambda: asyncio.run(verl_sync())),
                    ("verl, compute_score_async", lambda: asyncio.run(verl_async()))]:
        print(f"{name:34} {timed(f):7.1f} samples/s")
    server.shutdown()


if __name__ == "__main__":
    main()
