"""TRL reward function backed by `redjury serve`.

    from redjury_client import Client
    from redjury_trl import reward_function
    trainer = GRPOTrainer(..., reward_funcs=[reward_function(Client(URL))])

TRL passes the dataset's columns to reward functions as keyword lists. The
dataset needs a `task` column (the redjury task name); the rollout's
.docx comes from `docx_from(i, prompt, completion, kwargs)`, by default
the `docx_path` column (an environment that writes the .docx per rollout
passes its own function). A row the judges could not complete is None,
which TRL leaves out of that sample's reward sum (never a silent 0).
"""

from redjury_client import Client


def docx_path_column(i, prompt, completion, kwargs):
    return kwargs["docx_path"][i]


def reward_function(client=None, docx_from=docx_path_column, on_incomplete="null"):
    client = client or Client("http://127.0.0.1:8080")

    def redjury(prompts, completions, **kwargs):
        items = []
        for i, (p, c) in enumerate(zip(prompts, completions)):
            doc = docx_from(i, p, c, kwargs)
            source = {"docx": doc} if isinstance(doc, (bytes, bytearray)) else {"path": doc}
            trial = kwargs["trial"][i] if "trial" in kwargs else None
            items.append({"task": kwargs["task"][i], "trial": trial, **source})
        rows = client.score_batch(items, on_incomplete=on_incomplete)
        return [row["reward"] for row in rows]

    return redjury
