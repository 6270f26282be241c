"""Style judges of Chronologic-EN free generation (paper section 5.2.1, Appendix A.1).

- `dating`: the 36 ten-year bins 1680-2040, Gaussian soft targets, CRPS, predicted mean date;
- `encoders`: loading any Hugging Face encoder as a date predictor or authenticity detector,
  and batched prediction;
- `corpus`: reading and checking user-supplied passage corpora (training and reference);
- `train`: the training entry point (`python -m histbench.eval.chronologic.style.train`);
- `conformal`: percentiles in date- and length-matched windows of a reference corpus, the
  divergence from uniform W, its authentic baseline W0 and the 0-100 score f;
- `scoring`: scoring a run's answers with both judges.

Nothing here imports torch or transformers at import time.
"""
