-- local placeholder (not committed): migration 023 belongs to another helper
SELECT 1;
