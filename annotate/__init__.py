"""The human annotation app for QASemConsistency's protocol: tasks (tasks.py), the labels' database
(store.py), votes and export rows (votes.py), annotator quality (quality.py), the web server (serve.py,
app.py, page.py, static/annotate.js) and the entry points that move labels in and out (export.py,
import_votes.py, import_platform.py). docs/annotation.md says how to run it."""
