"""The human annotation app for QASemConsistency's protocol: tasks (tasks.py), the labels' database
(store.py), votes and export rows (votes.py), the web server (serve.py, app.py, page.py) and the
export / import entry points (export.py, import_votes.py). docs/annotation.md says how to run it."""
