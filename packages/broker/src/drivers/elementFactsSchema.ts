// The ElementFacts fields that describe what an action reaches (protocol ElementFacts), parsed where the facts
// enter the broker from a driver that validates its answers. The gate checks them again (deny on failure).
import type { HiddenReason } from "@tabrelay/protocol";
import { z } from "zod";

const HIDDEN = ["display", "visibility", "opacity", "size", "offscreen", "clipped", "inert", "aria-hidden", "detached"] as const satisfies readonly HiddenReason[];

const reachedElement = z.object({
  via: z.string(),
  role: z.string(),
  name: z.string(),
  visibleText: z.string(),
  tag: z.string(),
  inputType: z.string().optional(),
  disabled: z.boolean(),
  hidden: z.enum(HIDDEN).optional(),
  attributeText: z.string(),
  labelConflict: z.string().optional(),
});

/** Spread into a driver's ElementFacts object schema. */
export const reachFactsShape = {
  labelConflict: z.string().optional(),
  activates: z.array(reachedElement).optional(),
  key: z.string().optional(),
  submits: z.object({ form: reachedElement, button: reachedElement.optional() }).optional(),
  noSubmit: z.string().optional(),
  option: reachedElement.optional(),
};
