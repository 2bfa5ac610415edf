import csv
