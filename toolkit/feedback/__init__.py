"""Iterative feedback from an LLM for tool retrieval (Xu et al., EMNLP Findings 2024).

- :mod:`.round`: one round of the three-step feedback (its refinement asked after two yes/no questions) as
  one multi-turn chat (§4.2);
- :mod:`.loop`: the inference loop with "Iteration t" prefixes and "N/A" exits (§4.4), also used
  offline on training instructions;
- :mod:`.training`: iteration-aware training examples and the joint loss of Eqs. 5-6 (§4.3).
"""
