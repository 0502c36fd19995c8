"""Tests of the client and the adapters. Run by `cargo test --test main serve::`
against a real `redjury serve` (REDJURY_URL and the REDJURY_TEST_*
variables name it and the documents); the retry tests use a fake server
on 127.0.0.1 of their own."""

import http.server
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redjury_client import Client, IncompleteError, RedjuryError  # noqa: E402
import openrlhf_reward_func  # noqa: E402
import redjury_trl  # noqa: E402
import redjury_verl  # noqa: E402

URL = os.environ.get("REDJURY_URL")
TASK = os.environ.get("REDJURY_TEST_TASK")
DOCX = os.environ.get("REDJURY_TEST_DOCX")
BAD = os.environ.get("REDJURY_TEST_BAD_DOCX")


@unittest.skipUnless(URL, "needs a running redjury serve (REDJURY_URL)")
class AgainstTheServer(unittest.TestCase):
    def test_score_by_path_and_by_bytes_agree(self):
        c = Client(URL)
        by_path = c.score(TASK, path=DOCX, trial="py-1")
        self.assertEqual(by_path["status"], "scored")
        self.assertIsInstance(by_path["reward"], float)
        with open(DOCX, "rb") as f:
            by_bytes = c.score(TASK, docx=f.read(), trial="py-1")
        self.assertEqual(by_bytes["reward"], by_path["reward"])
        self.assertEqual(by_bytes["rubrics"], by_path["rubrics"])

    def test_batch_keeps_order_and_a_gate_failure_is_zero(self):
        rows = Client(URL).score_batch([
            {"task": TASK, "path": BAD, "trial": "bad"},
            {"task": TASK, "path": DOCX, "trial": "good"},
        ])
        self.assertEqual([r["trial"] for r in rows], ["bad", "good"])
        self.assertEqual(rows[0]["reward"], 0.0)
        self.assertEqual(rows[0]["reward_from"], "gate")
        self.assertEqual(rows[1]["status"], "scored")

    def test_a_bad_request_raises_with_the_servers_message(self):
        with self.assertRaises(RedjuryError) as e:
            Client(URL).score("no-such-task", path=DOCX)
        self.assertEqual(e.exception.status, 404)
        self.assertIn("unknown task", e.exception.message)

    def test_verl_compute_score(self):
        os.environ["REDJURY_URL"] = URL
        want = Client(URL).score(TASK, path=DOCX, trial="verl")["reward"]
        label = json.dumps({"task": TASK, "trial": "verl"})
        got = redjury_verl.compute_score("redline", "", label, extra_info={"docx_path": DOCX})
        self.assertEqual(got["score"], want)
        self.assertEqual(got["gate_passed"], 1.0)
        bad = redjury_verl.compute_score("redline", BAD, {"task": TASK})
        self.assertEqual(bad["score"], 0.0)

    def test_trl_reward_function(self):
        func = redjury_trl.reward_function(Client(URL))
        rewards = func(["p1", "p2"], ["c1", "c2"], task=[TASK, TASK], docx_path=[DOCX, BAD])
        self.assertEqual(len(rewards), 2)
        self.assertIsInstance(rewards[0], float)
        self.assertEqual(rewards[1], 0.0)

    def test_openrlhf_labels(self):
        os.environ["REDJURY_URL"] = URL
        labels = [json.dumps({"task": TASK, "path": DOCX}), json.dumps({"task": TASK, "path": BAD})]
        r = openrlhf_reward_func.request_rewards(["q1", "q2"], ["p", "p"], labels)
        self.assertEqual(len(r["rewards"]), 2)
        self.assertEqual(r["rewards"][1], 0.0)
        self.assertEqual(r["extra_logs"]["redjury_gate_passed"], [1.0, 0.0])


class Fake(http.server.BaseHTTPRequestHandler):
    """Answers from a script: a list of (status, headers, body)."""
    script = []
    seen = []

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Fake.seen.append(self.path)
        status, headers, body = Fake.script.pop(0) if Fake.script else Fake.last
        Fake.last = (status, headers, body)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        data = json.dumps(body).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Retries(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        Fake.seen = []

    def tearDown(self):
        self.server.shutdown()

    def test_429_and_503_are_retried_after_retry_after(self):
        Fake.script = [
            (429, {"Retry-After": "0"}, {"error": "the queue is full"}),
            (503, {"Retry-After": "0"}, {"error": "the deadline passed"}),
            (200, {}, {"reward": 0.5, "status": "scored"}),
        ]
        row = Client(self.url).score("t", docx=b"x")
        self.assertEqual(row["reward"], 0.5)
        self.assertEqual(len(Fake.seen), 3)

    def test_incomplete_rows_raise_after_the_retries(self):
        Fake.script = [(503, {"Retry-After": "0"}, {"error": "quorum", "incomplete": [{"task": "t"}]})]
        with self.assertRaises(IncompleteError):
            Client(self.url, retries=2).score("t", docx=b"x")
        self.assertEqual(len(Fake.seen), 3)

    def test_a_4xx_is_not_retried(self):
        Fake.script = [(400, {}, {"error": "docx_base64 is not base64"})]
        with self.assertRaises(RedjuryError) as e:
            Client(self.url).score("t", docx=b"x")
        self.assertEqual(e.exception.message, "docx_base64 is not base64")
        self.assertEqual(len(Fake.seen), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
