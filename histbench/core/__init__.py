"""The shared core of histbench, used by the builders, the evaluators and the package face
alike; it imports neither `histbench.builders` nor `histbench.eval`.

- errors (`errors`), optional dependencies and their extras (`extras`), progress and log
  lines (`progress`), atomic files and folders (`atomic`), inter-process locks (`locks`),
  signals that end a command as Ctrl-C does (`signals`),
  credential scrubbing (`secrets`), line-numbered JSON readers (`readers`), the sheets a
  person fills by hand, read and never overwritten (`sheets`), shipped files
  (`resources`), hashing and local-path checks (`hashing`, `paths`), schemas and their
  Arrow features (`schema`), Markdown tables and escaping (`markdown`), the one way text is
  put into a page (`pages`: escaping, Markdown with raw HTML off, safe links, the
  Content-Security-Policy), the running release (`version`),
  what a run gave (`results`);
- the built-dataset reader (`dataset`: a build folder or Hub id, as `load_dataset` gives it);
- the model engine: backends (`backends`: OpenAI-compatible APIs, local transformers, vLLM,
  the offline model), the run store (`runstore`), prefix-shared likelihood scoring
  (`likelihood`) and JSON from model text (`parsing`). Building (the Italian WSD model
  steps) and evaluating both ask models through it.
"""
