// The role switch: for a person whose grants give several roles (reviewer in kyc, approver),
// a select in the header. The chosen role goes with every request (X-Casework-Role) and the
// live connection (`role` in connection_init); the views are read again under it.

import { graphql } from "./api.js";
import { h } from "./dom.js";
import { words } from "./format.js";
import * as ops from "./operations.js";
import * as session from "./session.js";

function rolesOf(me) {
  return [...new Set((me.grants ?? []).map((grant) => grant.role))];
}

/** The select, or null for a single role. */
export function roleSwitch(me) {
  const roles = rolesOf(me);
  if (roles.length < 2) return null;
  const select = h(
    "select",
    { id: "role-switch", class: "input role-switch" },
    ...roles.map((role) => h("option", { value: role, selected: role === me.activeRole ? true : null }, words(role))),
  );
  select.addEventListener("change", async () => {
    const previous = session.role();
    session.setRole(select.value);
    select.disabled = true;
    try {
      const { me: now } = await graphql(ops.ME);
      // signIn again: the shell is drawn afresh, the socket reconnects under the new role.
      session.signIn(session.token(), now);
    } catch {
      session.setRole(previous);
      select.value = me.activeRole;
      select.disabled = false;
    }
  });
  return h("div", { class: "role-field" }, h("label", { for: "role-switch", class: "label-inline" }, "Role"), select);
}
