"""`ragwatch bench …` and `ragwatch demo …`: command groups the product CLI finds by their entry
points."""
