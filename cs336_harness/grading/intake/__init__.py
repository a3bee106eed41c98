"""Taking submissions in: which folders and archives are submissions, and the bounded copy of
each."""
