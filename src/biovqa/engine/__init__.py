"""Running models on a benchmark: backends, scheduling, the prediction store, run cards.

One module per job, in the order a run meets them:

* ``selection`` — which items a run asks (``--components/--tasks/--limit/--shard``) and how much
  of a selection merged shards cover;
* ``presets`` and ``image_tokens`` — the paper's 18 models (wrappers, pixel limits) and what an
  image costs each in prompt tokens;
* ``requests`` — one request per item: prompt through the preset's wrappers, image, token cap and
  mode (read from the component's declaration and the items), and the store key;
* ``batching`` — image-grouped, token-budgeted batches;
* ``executors`` and ``backends`` — where and with what the batches run;
* ``store``, ``card``, ``identity``, ``secrets`` — the prediction store, ``run.json``, what
  identifies the model, the credentials kept out of both;
* ``runner`` — the loop tying them together (``run_benchmark``); ``plan`` estimates a run before
  it is made.
"""
