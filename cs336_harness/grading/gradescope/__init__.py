"""What runs in Gradescope's container for each submission: the upload found, its student's
inputs drawn, the course's policies applied, results.json written."""
