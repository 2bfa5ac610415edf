
The schema (each column's kind, categories and statistics) goes
