import type { HiddenReason } from "@tabrelay/protocol";
/** Open and closed shadow roots; extensions may see closed ones through chrome.dom. */
export declare function shadowRootOf(el: Element): ShadowRoot | null;
export declare function normalize(text: string | null | undefined): string;
export declare const INTERACTIVE_ROLES: Set<string>;
export declare const LANDMARK_ROLES: Set<string>;
/** The element's role: the first valid token of role="", else the implicit role of its tag. */
export declare function roleOf(el: Element): string;
/** A practical subset of the accessible-name computation (accname 1.2). */
export declare function accessibleName(el: Element, role?: string): string;
/** What a person sees as the control's label (the write policy matches it together with the name). */
export declare function visibleLabel(el: Element): string;
/** Why a person could not see this element, or undefined when they can. */
export declare function hiddenReason(el: Element, requireInViewport: boolean): HiddenReason | undefined;
export declare function intersectsViewport(rect: DOMRect): boolean;
export declare function describeElement(el: Element): string;
/** The element a click at the element's centre would reach, when it is not the element (or its label). */
export declare function coveringElement(el: Element): Element | undefined;
/** Attribute values a decoy might carry instructions in. */
export declare function attributeText(el: Element): string;
