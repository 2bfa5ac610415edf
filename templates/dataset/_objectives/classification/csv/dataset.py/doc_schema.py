
The schema (each column's kind, categories and statistics, the class names) goes
