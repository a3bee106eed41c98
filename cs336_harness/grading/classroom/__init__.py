"""What runs on GitHub Actions in a student's repository for GitHub Classroom: the checkout
graded, each runner's result handed to the autograding reporter."""
