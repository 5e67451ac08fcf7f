-- name: revocation_subject_get
-- Whom a revocation names: a principal the provider vouched for, someone holding CLI
-- tokens (live or not), or a lease holder by that name. Nothing here: no such user.
SELECT EXISTS (SELECT 1 FROM principals WHERE user_name = :user_name) AS principal,
       EXISTS (SELECT 1 FROM api_tokens WHERE user_name = :user_name) AS tokens,
       EXISTS (SELECT 1 FROM review_items AS i
               WHERE i.lease_owner = :user_name AND i.state = 'pending'
                 AND i.lease_token IS NOT NULL AND i.lease_expires_at > now()) AS leases;

-- name: revocation_user_get_by_subject
-- Back-channel logout naming a subject: the principal with that issuer + subject.
SELECT user_name FROM principals WHERE issuer = :issuer AND subject = :subject;
