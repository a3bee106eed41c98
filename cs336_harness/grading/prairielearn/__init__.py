"""What runs in the course's image when PrairieLearn's external grader grades a submission:
the course's files made private, the upload found, its variant's inputs drawn,
results.json written in PrairieLearn's format."""
