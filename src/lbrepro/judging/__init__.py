"""How claims are judged where several papers judge alike: shared claim code of the papers.

Between the models and the papers (``tests/test_layers.py``): a paper package imports it, it
imports ``core`` (the verdict rules) and the models, and never a paper. Code here is named for
what it judges (``tails``: verdicts on a simulated tail), so the next paper that needs it
reuses it instead of copying it or sinking it into ``core``, which names no paper.
"""
