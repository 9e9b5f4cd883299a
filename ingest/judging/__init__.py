"""LLM judges and human labels, stored as `judgment` events (docs/judging.md).

rubric.py reads and checks a rubric file; prompts.py renders its prompt for each target;
providers.py asks the OpenAI and Anthropic SDKs; answers.py reads what a judge answered;
events.py turns answers and labels into native-format event lines; spool.py keeps answers
safe until they are committed; judge.py runs a rubric over its targets; labels.py records
people's labels; export.py writes labelled targets as an eval set.
"""
