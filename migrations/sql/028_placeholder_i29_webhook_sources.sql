-- Placeholder on branch i29-webhook-sources only: migrations must be numbered without gaps, and
-- this branch's own is 030 (028 and 029 are other issue-29 branches'). Delete at merge.
SELECT 1;
