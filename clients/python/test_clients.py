"""Tests of the client and the trainer adapters. Run by `cargo test --test
main serve::` against a real `redjury serve` (REDJURY_URL and the
REDJURY_TEST_* variables name it and the documents; it runs with a queue of
REDJURY_TEST_QUEUE outputs); the retry and deadline tests use a fake server
on 127.0.0.1 of their own.

Each trainer's adapter is loaded and called exactly as that trainer does,
in a fresh `python3 -I` (no PYTHONPATH, nothing added to sys.path) from
another directory; the trainer's file and version are quoted at each."""

import asyncio
import http.server
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "redjury_client.py")
# REDJURY_TEST_INSTALLED=1: the module comes from the package pip
# installed (`pip install ./clients/python`), not from this folder.
INSTALLED = os.environ.get("REDJURY_TEST_INSTALLED") == "1"
if INSTALLED:
    # Python puts a script's own folder first on sys.path.
    sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
else:
    sys.path.insert(0, HERE)

import redjury_client  # noqa: E402
from redjury_client import Client, IncompleteError, RedjuryError  # noqa: E402

if INSTALLED and os.path.dirname(os.path.abspath(redjury_client.__file__)) == HERE:
    raise SystemExit(f"redjury_client was imported from {HERE}, not from the installed package")

URL = os.environ.get("REDJURY_URL")
TASK = os.environ.get("REDJURY_TEST_TASK")
DOCX = os.environ.get("REDJURY_TEST_DOCX")
BAD = os.environ.get("REDJURY_TEST_BAD_DOCX")
QUEUE = int(os.environ.get("REDJURY_TEST_QUEUE", "0"))

# verl 0.9.1, verl/utils/import_utils.py `load_module` (as
# `load_extern_object` calls it from verl/trainer/ppo/reward.py
# `get_custom_reward_fn`): a spec from the file, a generated module name,
# nothing added to sys.path or sys.modules.
LOAD_LIKE_VERL = """
import importlib.util, os
def load(path, name):
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
"""

# OpenRLHF 0.11.2, openrlhf/utils/agent.py l.198-205 (loading) and
# `_fetch_rewards_via_func` l.306-325 (calling: in a thread, three lists
# of one, positionally).
LOAD_LIKE_OPENRLHF = """
import asyncio, importlib.util
def load(path):
    spec = importlib.util.spec_from_file_location("reward_func", path)
    reward_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reward_module)
    return reward_module.reward_func
"""


def run_isolated(code, env=None):
    """Runs `code` in `python3 -I` from a scratch directory; its stdout as
    JSON."""
    with tempfile.TemporaryDirectory() as cwd:
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        full_env.update(env or {})
        out = subprocess.run([sys.executable, "-I", "-c", textwrap.dedent(code)], cwd=cwd,
                             env=full_env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return json.loads(out.stdout)


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

    def test_a_batch_larger_than_the_queue_is_sent_in_parts_in_order(self):
        # Regression: TRL's batch of more outputs than the server's queue
        # raised RedjuryError 413 from the adapter.
        self.assertGreater(QUEUE, 0)
        n = QUEUE * 2 + 1
        items = [{"task": TASK, "path": BAD if i % 3 == 0 else DOCX, "trial": f"part-{i}"}
                 for i in range(n)]
        rows = Client(URL).score_batch(items)
        self.assertEqual([r["trial"] for r in rows], [f"part-{i}" for i in range(n)])
        self.assertEqual([r["reward_from"] == "gate" for r in rows], [i % 3 == 0 for i in range(n)])

    def test_a_bad_request_raises_with_the_servers_message(self):
        with self.assertRaises(RedjuryError) as e:
            Client(URL).score("no-such-task", path=DOCX)
        self.assertEqual(e.exception.status, 404)
        self.assertIn("unknown task", e.exception.message)

    def test_verl_loads_the_file_by_path_and_calls_it_per_sample(self):
        # Regression: verl loaded redjury_verl.py by path and its
        # `import redjury_client` failed (ModuleNotFoundError).
        # Calls: verl 0.9.1, verl/experimental/reward_loop/reward_manager/
        # naive.py `run_single`: keywords only, in the loop's thread pool,
        # samples at once.
        want = Client(URL).score(TASK, path=DOCX, trial="verl")["reward"]
        got = run_isolated(LOAD_LIKE_VERL + f"""
import json
from concurrent.futures import ThreadPoolExecutor
compute_score = load({CLIENT!r}, "compute_score")
label = json.dumps({{"task": {TASK!r}, "trial": "verl"}})
with ThreadPoolExecutor(4) as pool:
    futures = [pool.submit(lambda: compute_score(data_source="redline", solution_str="",
                                                 ground_truth=label,
                                                 extra_info={{"docx_path": {DOCX!r}, "num_turns": None}}))
               for _ in range(4)]
    good = [f.result() for f in futures]
bad = compute_score(data_source="redline", solution_str={BAD!r},
                    ground_truth={{"task": {TASK!r}}}, extra_info={{}})
print(json.dumps({{"good": good, "bad": bad}}))
""", {"REDJURY_URL": URL})
        self.assertEqual([g["score"] for g in got["good"]], [want] * 4)
        self.assertEqual(got["good"][0]["gate_passed"], 1.0)
        first = got["good"][0]
        self.assertGreater(first["rubrics_passed"] + first["rubrics_failed"], 0.0, first)
        # verl takes the keys of the first sample for all: every sample has
        # the same ones, numbers only.
        self.assertEqual(set(got["bad"]), set(got["good"][0]))
        self.assertTrue(all(isinstance(v, float) for v in got["bad"].values()))
        self.assertEqual((got["bad"]["score"], got["bad"]["gate_passed"], got["bad"]["incomplete"]),
                         (0.0, 0.0, 0.0))

    def test_verl_batch_form_is_one_request(self):
        # Regression: a TypeError. verl's BatchRewardManager
        # (verl/workers/reward_manager/batch.py, 0.9.1) calls
        # compute_score(data_sources=, solution_strs=, ground_truths=,
        # extra_infos=) and indexes the result per sample.
        got = run_isolated(LOAD_LIKE_VERL + f"""
import json
compute_score = load({CLIENT!r}, "compute_score")
scores = compute_score(data_sources=["redline", "redline"], solution_strs=["", ""],
                       ground_truths=[json.dumps({{"task": {TASK!r}}}), {{"task": {TASK!r}}}],
                       extra_infos=[{{"docx_path": {DOCX!r}}}, {{"docx_path": {BAD!r}}}])
print(json.dumps(scores))
""", {"REDJURY_URL": URL})
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0]["gate_passed"], 1.0)
        self.assertEqual(got[1]["score"], 0.0)

    def test_openrlhf_loads_reward_func_by_path(self):
        labels = [json.dumps({"task": TASK, "path": DOCX}), json.dumps({"task": TASK, "path": BAD})]
        got = run_isolated(LOAD_LIKE_OPENRLHF + f"""
import json
reward_func = load({CLIENT!r})
async def main():
    return await asyncio.gather(*[asyncio.to_thread(reward_func, [q], ["p"], [l])
                                  for q, l in zip(["q1", "q2"], {labels!r})])
print(json.dumps(asyncio.run(main())))
""", {"REDJURY_URL": URL})
        self.assertEqual(len(got), 2)
        self.assertEqual((got[1]["rewards"], got[1]["scores"]), ([0.0], [0.0]))
        self.assertEqual(got[1]["extra_logs"]["redjury_gate_passed"], [0.0])
        self.assertIsInstance(got[0]["rewards"][0], float)
        # The server's extra_logs are the adapters' extra_info, key for key.
        row = Client(URL).score(TASK, path=DOCX)
        want = {f"redjury_{k}": [v] for k, v in redjury_client.extra_info(row).items()}
        self.assertEqual(got[0]["extra_logs"], want)
        self.assertGreater(want["redjury_possible_commercial_context"][0], 0.0)

    def test_verl_awaits_the_async_form_on_its_loop(self):
        # verl 0.9.1, naive.py `run_single`: an async compute_score
        # (inspect.iscoroutinefunction) is awaited on the reward loop.
        want = Client(URL).score(TASK, path=DOCX, trial="verl-async")["reward"]
        got = run_isolated(LOAD_LIKE_VERL + f"""
import asyncio, inspect, json
compute_score = load({CLIENT!r}, "compute_score_async")
assert inspect.iscoroutinefunction(compute_score)
async def main():
    return await asyncio.gather(*[compute_score(data_source="redline", solution_str="",
        ground_truth={{"task": {TASK!r}, "trial": "verl-async"}},
        extra_info={{"docx_path": {DOCX!r}}}) for _ in range(3)])
print(json.dumps(asyncio.run(main())))
""", {"REDJURY_URL": URL})
        self.assertEqual([g["score"] for g in got], [want] * 3)

    def test_trl_calls_the_reward_function_with_its_keywords(self):
        # TRL 1.16.0, trl/trainer/grpo_trainer.py `_calculate_rewards`:
        # prompts=, completions=, completion_ids=, trainer_state=,
        # log_extra=, log_metric= and every dataset column, as keywords; a
        # list of len(prompts) floats or None comes back.
        got = run_isolated(LOAD_LIKE_VERL + f"""
import json
factory = load({CLIENT!r}, "trl_reward_function")
reward = factory()
print(json.dumps(reward(prompts=["p1", "p2"], completions=["c1", "c2"], completion_ids=[[1], [2]],
                        trainer_state=None, log_extra=lambda *a: None, log_metric=lambda *a: None,
                        task=[{TASK!r}, {TASK!r}], docx_path=[{DOCX!r}, {BAD!r}])))
""", {"REDJURY_URL": URL})
        self.assertEqual(len(got), 2)
        self.assertIsInstance(got[0], float)
        self.assertEqual(got[1], 0.0)

    def test_trl_logs_each_samples_numbers_and_reason(self):
        # TRL 1.16.0, grpo_trainer.py `_log_completion_extra(column,
        # values)` (one value per sample) and `_log_metric(name, value)`.
        columns, metrics = {}, {}
        reward = redjury_client.trl_reward_function(Client(URL))
        got = reward(prompts=["p1", "p2"], completions=["c1", "c2"], task=[TASK, TASK],
                     docx_path=[DOCX, BAD], log_extra=columns.__setitem__,
                     log_metric=metrics.__setitem__)
        self.assertEqual(got[1], 0.0)
        self.assertEqual(columns["redjury_gate_passed"], [1.0, 0.0])
        self.assertEqual(columns["redjury_reason"][0], "")
        self.assertEqual(metrics["redjury/gate_passed"], 0.5)
        self.assertEqual(len(columns["redjury_rubrics_passed"]), 2)


class Fake(http.server.BaseHTTPRequestHandler):
    """Answers from a script: a list of (status, headers, body), each after
    `delay` seconds; counts the requests in flight at once."""
    script = []
    seen = []
    delay = 0.0
    lock = threading.Lock()
    in_flight = 0
    most_in_flight = 0
    gather = 0
    arrived = threading.Condition()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Fake.lock:
            Fake.seen.append(self.path)
            Fake.in_flight += 1
            Fake.most_in_flight = max(Fake.most_in_flight, Fake.in_flight)
            status, headers, body = Fake.script.pop(0) if Fake.script else Fake.last
            Fake.last = (status, headers, body)
        import time
        time.sleep(Fake.delay)
        with Fake.arrived:
            # Held until `gather` requests are in flight together (or 10 s
            # passed): the concurrency test then counts them exactly.
            Fake.arrived.notify_all()
            Fake.arrived.wait_for(lambda: Fake.in_flight >= Fake.gather, timeout=10)
        with Fake.lock:
            Fake.in_flight -= 1
        try:
            self.answer(status, headers, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first: what the deadline tests do

    def answer(self, status, headers, body):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        data = json.dumps(body).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class FakeServer(http.server.ThreadingHTTPServer):
    # Room for every connection of the concurrency test at once: with the
    # default backlog of 5, connections beyond it wait for a SYN retry.
    request_queue_size = 128


INCOMPLETE = (503, {"Retry-After": "0.2"}, {"error": "quorum", "incomplete": [{"task": "t"}]})


class RetriesAndDeadlines(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        Fake.seen = []
        Fake.script = []
        Fake.delay = 0.0
        Fake.in_flight = Fake.most_in_flight = Fake.gather = 0

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_429_and_503_are_retried_after_retry_after(self):
        Fake.script = [
            (429, {"Retry-After": "0"}, {"error": "the queue is full"}),
            (503, {"Retry-After": "0"}, {"error": "the deadline passed"}),
            (200, {}, {"reward": 0.5, "status": "scored"}),
        ]
        row = Client(self.url).score("t", docx=b"x")
        self.assertEqual(row["reward"], 0.5)
        self.assertEqual(len(Fake.seen), 3)

    def test_incomplete_rows_raise_at_the_calls_deadline(self):
        # Regression: an incomplete row held a trainer worker ~3 minutes (6
        # retries x Retry-After 30 s) before IncompleteError.
        Fake.script = [INCOMPLETE]
        import time
        started = time.monotonic()
        with self.assertRaises(IncompleteError):
            Client(self.url, deadline=1.0).score("t", docx=b"x")
        took = time.monotonic() - started
        self.assertLess(took, 3.0)
        self.assertGreaterEqual(len(Fake.seen), 2)

    def test_trl_gets_none_when_the_deadline_passes(self):
        Fake.script = [INCOMPLETE]
        reward = redjury_client.trl_reward_function(Client(self.url, deadline=1.0))
        got = reward(prompts=["p", "p"], completions=["c", "c"], task=["t", "t"],
                     docx_path=[b"x", b"y"])
        self.assertEqual(got, [None, None])

    def test_verl_raises_or_answers_the_chosen_number(self):
        Fake.script = [INCOMPLETE]
        code = LOAD_LIKE_VERL + f"""
import json
compute_score = load({CLIENT!r}, "compute_score")
try:
    print(json.dumps(compute_score(data_source="d", solution_str="/x.docx", ground_truth={{"task": "t"}})))
except Exception as e:
    print(json.dumps(type(e).__name__))
"""
        env = {"REDJURY_URL": self.url, "REDJURY_DEADLINE": "1"}
        self.assertEqual(run_isolated(code, env), "IncompleteError")
        Fake.script = [(200, {}, {"reward": -1.0, "reward_from": "on_incomplete",
                                  "gate": {"passed": True}})]
        got = run_isolated(code, {**env, "REDJURY_ON_INCOMPLETE": "-1"})
        self.assertEqual((got["score"], got["gate_passed"], got["incomplete"]), (-1.0, 1.0, 1.0))

    def test_judges_slower_than_the_deadline_give_every_trainer_its_value(self):
        # Regression: the client's own timeout at the deadline raised a
        # plain RedjuryError ("cannot reach …: timed out", status 0) from
        # the verl and OpenRLHF adapters, also with REDJURY_ON_INCOMPLETE
        # set, so the rollout got no reward.
        Fake.script = [(200, {}, {"results": [{"reward": 0.5}], "reward": 0.5})]
        Fake.delay = 3.0
        env = {"REDJURY_URL": self.url, "REDJURY_DEADLINE": "0.5"}
        code = LOAD_LIKE_VERL + f"""
import asyncio, json
out = {{}}
for name in ("compute_score", "compute_score_async"):
    f = load({CLIENT!r}, name)
    try:
        r = f(data_source="d", solution_str="/x.docx", ground_truth={{"task": "t"}})
        out[name] = asyncio.run(r) if asyncio.iscoroutine(r) else r
    except Exception as e:
        out[name] = type(e).__name__
print(json.dumps(out))
"""
        self.assertEqual(run_isolated(code, env),
                         {"compute_score": "IncompleteError", "compute_score_async": "IncompleteError"})
        got = run_isolated(code, {**env, "REDJURY_ON_INCOMPLETE": "0.0"})
        for name in ("compute_score", "compute_score_async"):
            self.assertEqual((got[name]["score"], got[name]["incomplete"]), (0.0, 1.0), name)
        rlhf = run_isolated(LOAD_LIKE_OPENRLHF + f"""
import json
print(json.dumps(load({CLIENT!r})(["q"], ["p"], [json.dumps({{"task": "t", "path": "/x.docx"}})])))
""", {**env, "REDJURY_ON_INCOMPLETE": "-1"})
        self.assertEqual(rlhf["rewards"], [-1.0])
        self.assertEqual(rlhf["extra_logs"]["redjury_incomplete"], [1.0])
        columns = {}
        for make in (redjury_client.trl_reward_function, redjury_client.trl_async_reward_function):
            r = make(Client(self.url, deadline=0.5))(prompts=["p"], completions=["c"], task=["t"],
                                                     docx_path=["/x.docx"], log_extra=columns.__setitem__)
            got = asyncio.run(r) if asyncio.iscoroutine(r) else r
            self.assertEqual(got, [None], make.__name__)
            self.assertEqual(columns["redjury_incomplete"], [1.0])
            self.assertIn("deadline", columns["redjury_reason"][0])

    def test_a_server_that_cannot_be_reached_is_an_error_not_an_incomplete_row(self):
        self.server.shutdown()
        self.server.server_close()
        with self.assertRaises(RedjuryError) as e:
            Client(self.url, deadline=0.5).score("t", docx=b"x")
        self.assertNotIsInstance(e.exception, IncompleteError)
        self.assertIn("cannot reach", e.exception.message)
        # A server for tearDown to stop.
        self.server = FakeServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def test_the_async_forms_send_every_sample_at_once(self):
        # verl 0.9.1 gives a sync compute_score one of its loop's default
        # executor threads (min(32, cpus + 4)); the async form is awaited
        # on the loop, so all 24 samples are in flight together.
        Fake.script = [(200, {}, {"reward": 0.5, "reward_from": "judges", "gate": {"passed": True}})]
        Fake.gather = 24
        got = run_isolated(LOAD_LIKE_VERL + f"""
import asyncio, json
compute_score = load({CLIENT!r}, "compute_score_async")
async def main():
    return await asyncio.gather(*[compute_score(data_source="d", solution_str="/x.docx",
                                                ground_truth={{"task": "t"}}) for _ in range(24)])
print(json.dumps([r["score"] for r in asyncio.run(main())]))
""", {"REDJURY_URL": self.url})
        self.assertEqual(got, [0.5] * 24)
        self.assertEqual(Fake.most_in_flight, 24)

    def test_a_batch_the_body_limit_refuses_is_halved(self):
        Fake.script = [
            (413, {}, {"error": "request body larger than 10 bytes"}),
            (200, {}, {"results": [{"trial": "a"}]}),
            (200, {}, {"results": [{"trial": "b"}]}),
        ]
        rows = Client(self.url).score_batch([{"task": "t", "docx": b"1", "trial": "a"},
                                            {"task": "t", "docx": b"2", "trial": "b"}])
        self.assertEqual([r["trial"] for r in rows], ["a", "b"])

    def test_a_4xx_is_not_retried(self):
        Fake.script = [(400, {}, {"error": "docx_base64 is not base64"})]
        with self.assertRaises(RedjuryError) as e:
            Client(self.url).score("t", docx=b"x")
        self.assertEqual(e.exception.message, "docx_base64 is not base64")
        self.assertEqual(len(Fake.seen), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
